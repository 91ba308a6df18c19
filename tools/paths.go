package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
)

// Rel returns path relative to the workspace ("." for the workspace
// itself). path must be absolute and inside the workspace, else a
// validation [ToolError].
func (e *Env) Rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", Errorf(ErrValidation, "path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	if !config.Within(clean, e.Workspace) {
		return "", Errorf(ErrValidation, "path %s is outside the workspace %s", path, e.Workspace)
	}
	rel, err := filepath.Rel(e.Workspace, clean)
	if err != nil {
		return "", Errorf(ErrValidation, "path %s: %v", path, err)
	}
	return rel, nil
}

// RootFor returns the os.Root that contains path (the workspace or one of
// the read-only dirs) and path relative to it. Every host-side access must
// go through the returned root so that symlinks cannot lead outside.
func (e *Env) RootFor(path string) (*os.Root, string, error) {
	if !filepath.IsAbs(path) {
		return nil, "", Errorf(ErrValidation, "path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	if e.Root != nil && config.Within(clean, e.Workspace) {
		rel, _ := filepath.Rel(e.Workspace, clean)
		return e.Root, rel, nil
	}
	for _, d := range e.ReadOnlyDirs {
		if config.Within(clean, d) {
			r := e.ReadRoots[d]
			if r == nil {
				break
			}
			rel, _ := filepath.Rel(d, clean)
			return r, rel, nil
		}
	}
	return nil, "", Errorf(ErrPermissionDenied, "%s is outside the workspace and the readable directories", path)
}

// Open opens path for reading through its root.
func (e *Env) Open(path string) (*os.File, error) {
	r, rel, err := e.RootFor(path)
	if err != nil {
		return nil, err
	}
	return r.Open(rel)
}

// Lstat stats path through its root without following a final symlink.
func (e *Env) Lstat(path string) (fs.FileInfo, error) {
	r, rel, err := e.RootFor(path)
	if err != nil {
		return nil, err
	}
	return r.Lstat(rel)
}

// SetCwd moves the session's working directory; dir must be an existing
// directory inside the workspace.
func (e *Env) SetCwd(dir string) error {
	if _, err := e.Rel(dir); err != nil {
		return err
	}
	fi, err := e.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return Errorf(ErrValidation, "%s is not a directory in the workspace", dir)
	}
	e.Session.SetCwd(filepath.Clean(dir))
	return nil
}

// maxHashBytes bounds the content hashed for a ReadStamp.
const maxHashBytes = 64 << 20

// Stamp describes path as it is now, for the read tracker.
func (e *Env) Stamp(path string) (ReadStamp, error) {
	f, err := e.Open(path)
	if err != nil {
		return ReadStamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ReadStamp{}, err
	}
	st := ReadStamp{ModTime: fi.ModTime(), Size: fi.Size()}
	if e.Now != nil {
		st.At = e.Now()
	}
	if fi.Mode().IsRegular() && fi.Size() <= maxHashBytes {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return ReadStamp{}, err
		}
		st.Hash = hex.EncodeToString(h.Sum(nil))
	}
	return st, nil
}

// ErrLeavesRoot is wrapped by [ResolveBeneath] when a symlink (or a '..' in
// one) leads out of the directory paths are resolved beneath.
var ErrLeavesRoot = errors.New("leads out of the workspace")

// maxSymlinks bounds the symlinks one resolution follows, as the kernel
// does (ELOOP).
const maxSymlinks = 40

// ResolveBeneath returns where the absolute, clean path p (base or below
// it) really leads: each component's symlink is resolved through root
// (base opened as an os.Root), one component at a time, never leaving
// base. The first component that does not exist ends the resolution: it
// and the rest are taken as written, so a new file resolves through its
// parent and a dangling symlink through its target. A symlink whose
// target leads out of base, or too many symlinks, is an error (wrapping
// [ErrLeavesRoot] for the former). It reads only metadata.
func ResolveBeneath(root *os.Root, base, p string) (string, error) {
	if !config.Within(p, base) {
		return "", fmt.Errorf("%s is not below %s: %w", p, base, ErrLeavesRoot)
	}
	top, err := root.Open(".")
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	defer top.Close()
	// dirs[i] is the open directory done[:i] (dirs[0] is base): each step
	// is one fstatat or readlinkat of a single name in an open directory,
	// none follows a symlink, and '..' pops instead of asking the kernel.
	dirs := []int{int(top.Fd())}
	var done []string
	defer func() {
		for _, fd := range dirs[1:] {
			unix.Close(fd)
		}
	}()
	pop := func() {
		unix.Close(dirs[len(dirs)-1])
		dirs = dirs[:len(dirs)-1]
		done = done[:len(done)-1]
	}
	rest, _ := filepath.Rel(base, p)
	todo := splitPath(rest)
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", fmt.Errorf("%s: a symlink's '..' %w", p, ErrLeavesRoot)
			}
			pop()
			continue
		}
		dir := dirs[len(dirs)-1]
		var st unix.Stat_t
		if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				// Nothing exists below here: the rest is as written.
				real := filepath.Join(append(append([]string{base}, done...), append([]string{name}, todo...)...)...)
				if !config.Within(real, base) {
					return "", fmt.Errorf("%s: a symlink's '..' %w", p, ErrLeavesRoot)
				}
				return real, nil
			}
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
		case unix.S_IFDIR:
			fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return "", fmt.Errorf("resolving %s: %w", p, err)
			}
			dirs = append(dirs, fd)
			done = append(done, name)
			continue
		default:
			// A file: anything below it does not exist.
			return filepath.Join(append(append([]string{base}, done...), append([]string{name}, todo...)...)...), nil
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("resolving %s: too many levels of symbolic links", p)
		}
		target, err := readlinkat(dir, name)
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			t := filepath.Clean(target)
			if !config.Within(t, base) {
				link := filepath.Join(append(append([]string{base}, done...), name)...)
				if link == p {
					return "", fmt.Errorf("the symlink %s points to %s, which %w", link, target, ErrLeavesRoot)
				}
				return "", fmt.Errorf("%s: the symlink %s points to %s, which %w", p, link, target, ErrLeavesRoot)
			}
			for len(done) > 0 {
				pop()
			}
			r, _ := filepath.Rel(base, t)
			todo = append(splitPath(r), todo...)
			continue
		}
		todo = append(splitPath(target), todo...)
	}
	return filepath.Join(append([]string{base}, done...)...), nil
}

// readlinkat reads the symlink name in the directory open at dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", unix.ENAMETOOLONG
		}
	}
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// RealPath resolves the absolute path p beneath the workspace, or beneath
// the read-only directory that holds it (see [ResolveBeneath]). A path in
// neither is returned as it is.
func (e *Env) RealPath(p string) (string, error) {
	return realPath(e.Workspace, e.Root, e.ReadOnlyDirs, e.ReadRoots, p)
}

func realPath(ws string, wsRoot *os.Root, roDirs []string, roRoots map[string]*os.Root, p string) (string, error) {
	p = filepath.Clean(p)
	if wsRoot != nil && config.Within(p, ws) {
		real, err := ResolveBeneath(wsRoot, ws, p)
		if errors.Is(err, ErrLeavesRoot) {
			return "", Errorf(ErrPermissionDenied, "%v; agentbox does not follow symlinks out of the workspace", err)
		}
		return real, err
	}
	for _, d := range roDirs {
		if r := roRoots[d]; r != nil && config.Within(p, d) {
			real, err := ResolveBeneath(r, d, p)
			if errors.Is(err, ErrLeavesRoot) {
				return "", Errorf(ErrPermissionDenied, "%s: a symlink leads out of the read-only directory %s", p, d)
			}
			return real, err
		}
	}
	return p, nil
}
