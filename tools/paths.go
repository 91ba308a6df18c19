package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// within reports whether the clean absolute path p is dir or below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir+"/")
}

// Rel returns path relative to the workspace ("." for the workspace
// itself). path must be absolute and inside the workspace, else a
// validation ToolError.
func (e *Env) Rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", Errorf(ErrValidation, "path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	if !within(clean, e.Workspace) {
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
	if e.Root != nil && within(clean, e.Workspace) {
		rel, _ := filepath.Rel(e.Workspace, clean)
		return e.Root, rel, nil
	}
	for _, d := range e.ReadOnlyDirs {
		if within(clean, d) {
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
