package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

// fsMode converts unix permission bits to an fs.FileMode.
func fsMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// planItem sets Path to Target (nil: absent).
type planItem struct {
	Path   string
	Target *Node
}

func tmpName(p, id string, i int) string {
	dir, _ := splitRel(p)
	return joinRel(dir, fmt.Sprintf(".agentbox-restore-%s-%d.tmp", id, i))
}

// checkRestorable fails before anything is touched if a target cannot be
// produced.
func (s *Store) checkRestorable(items []planItem) error {
	for _, it := range items {
		t := it.Target
		if t == nil {
			continue
		}
		switch t.Type {
		case TypeFile:
			if t.Unreadable || t.Hash == "" {
				return fmt.Errorf("snapshot: %s: its content was unreadable when recorded and cannot be restored", quotePath(it.Path))
			}
			if !s.hasBlob(t.Hash) {
				return fmt.Errorf("snapshot: %s: content %s: %w (removed by gc?)", quotePath(it.Path), t.Hash[:12], ErrNotFound)
			}
		case TypeDir, TypeSymlink, TypeFIFO:
		default:
			return fmt.Errorf("snapshot: %s: a %s cannot be restored", quotePath(it.Path), t.Type)
		}
	}
	return nil
}

// apply makes every path of the plan match its target, through os.Root so
// that nothing outside the workspace is touched. It is idempotent. With
// force, a directory in the way is removed with whatever it holds, and a
// non-directory where a parent directory must be is removed. It returns
// the state it left for the paths it wrote (files, symlinks; nil for
// removed ones), so that callers need not read them back.
func (s *Store) apply(ctx context.Context, id string, items []planItem, force bool) (map[string]*ientry, error) {
	root, err := os.OpenRoot(s.workspace)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer root.Close()
	rootfd, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootfd)
	after := map[string]*ientry{}
	idx := map[string]int{}
	for i, it := range items {
		idx[it.Path] = i
		root.Remove(tmpName(it.Path, id, i)) // leftovers of an interrupted run
	}
	absent := map[string]bool{}
	// 1. Remove what is in the way, deepest first.
	desc := append([]planItem(nil), items...)
	sort.Slice(desc, func(i, j int) bool { return desc[i].Path > desc[j].Path })
	for _, it := range desc {
		if err := ctx.Err(); err != nil {
			return after, err
		}
		cur, err := lstatBeneath(rootfd, it.Path)
		if err != nil {
			return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		if cur == "" {
			absent[it.Path] = true
			continue // absent, or under a symlink or non-directory that goes first
		}
		if it.Target != nil && cur == it.Target.Type && (cur == TypeDir || cur == TypeFile) {
			continue // replaced in place (files by rename) below
		}
		rm := root.Remove
		if force {
			rm = root.RemoveAll
		}
		if err := rm(it.Path); err != nil {
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return after, fmt.Errorf("snapshot: restore %s: directory holds paths that were never recorded (excluded?); remove them first: %w", quotePath(it.Path), err)
			}
			return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		absent[it.Path] = true
		if it.Target == nil {
			after[it.Path] = nil
		}
		s.hook("apply-removed")
	}
	// 2. Create, shallowest first, through one sub-root per directory.
	dirs := map[string]*os.Root{"": root}
	defer func() {
		for d, r := range dirs {
			if d != "" {
				r.Close()
			}
		}
	}()
	openDir := func(dir string) (*os.Root, error) {
		if r, ok := dirs[dir]; ok {
			return r, nil
		}
		r, err := root.OpenRoot(dir)
		if err != nil {
			if force {
				if err := clearAncestors(root, rootfd, dir); err != nil {
					return nil, err
				}
			}
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			r, err = root.OpenRoot(dir)
		}
		if err != nil {
			return nil, err
		}
		dirs[dir] = r
		return r, nil
	}
	buf := make([]byte, 1<<20)
	asc := append([]planItem(nil), items...)
	sort.Slice(asc, func(i, j int) bool { return asc[i].Path < asc[j].Path })
	for _, it := range asc {
		if it.Target == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return after, err
		}
		dir, base := splitRel(it.Path)
		d, err := openDir(dir)
		if err != nil {
			return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		_, tmp := splitRel(tmpName(it.Path, id, idx[it.Path]))
		t := it.Target
		var made *ientry
		switch t.Type {
		case TypeDir:
			if err := d.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
		case TypeFile:
			name := tmp
			if absent[it.Path] {
				name = base // nothing to replace: write in place
			}
			made, err = s.writeBlobTo(d, name, t, buf)
			if err != nil {
				d.Remove(name)
				return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
			if name != base {
				if err := d.Rename(tmp, base); err != nil {
					d.Remove(tmp)
					return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
				}
				made = nil // rename changes ctime: read it back later
			}
		case TypeSymlink, TypeFIFO:
			var err error
			if t.Type == TypeSymlink {
				err = d.Symlink(t.Link, tmp)
			} else {
				err = mkfifoIn(d, tmp, t.Mode)
			}
			if err != nil {
				return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
			if err := d.Rename(tmp, base); err != nil {
				d.Remove(tmp)
				return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
		default:
			return after, fmt.Errorf("snapshot: %s: a %s cannot be restored", quotePath(it.Path), t.Type)
		}
		if made != nil {
			after[it.Path] = made
		}
		s.hook("apply-created")
	}
	// 3. Directory modes last, deepest first, so a read-only directory
	// does not stop its children being written.
	for _, it := range desc {
		if it.Target != nil && it.Target.Type == TypeDir {
			if err := root.Chmod(it.Path, fsMode(it.Target.Mode)); err != nil {
				return after, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
		}
	}
	return after, nil
}

// clearAncestors removes any non-directory among the ancestors of dir.
func clearAncestors(root *os.Root, rootfd int, dir string) error {
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		t, err := lstatBeneath(rootfd, p)
		if err != nil {
			return err
		}
		if t == "" {
			return nil
		}
		if t != TypeDir {
			if err := root.Remove(p); err != nil {
				return err
			}
			return nil
		}
	}
	return nil
}

// lstatBeneath returns the type of rel without following any symlink on
// the way, or "" when it does not exist as such.
func lstatBeneath(rootfd int, rel string) (Type, error) {
	dir, name := splitRel(rel)
	fd, err := openDirAt(rootfd, dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return "", nil
		}
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "", nil
		}
		return "", err
	}
	return entryFromStat(&st).Type, nil
}

// writeBlobTo streams blob t.Hash into a new file name under dir,
// verifying the content, gives it t's mode, and returns its state.
func (s *Store) writeBlobTo(dir *os.Root, name string, t *Node, buf []byte) (*ientry, error) {
	src, err := s.openBlob(t.Hash)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	vw := &verifyingWriter{w: dst, h: sha256.New()}
	if _, err := io.CopyBuffer(vw, src, buf); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(vw.h.Sum(nil)); got != t.Hash {
		return nil, fmt.Errorf("blob %s: content does not match its hash: %w", t.Hash[:12], ErrCorrupt)
	}
	if err := dst.Chmod(fsMode(t.Mode)); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(dst.Fd()), &st); err != nil {
		return nil, err
	}
	e := entryFromStat(&st)
	e.Hash = t.Hash
	e.racy = true // written just now
	return e, dst.Close()
}

// mkfifoIn makes a FIFO at name, through a directory opened in root.
func mkfifoIn(root *os.Root, name string, mode uint32) error {
	dir, base := path.Split(name)
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(path.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Mkfifoat(int(d.Fd()), base, mode&0o7777); err != nil {
		return err
	}
	// Set the exact mode (the umask trimmed it) through an fd opened
	// without following links: a name swapped for a symlink by a
	// concurrent writer must not redirect the chmod outside the root.
	// O_NONBLOCK keeps opening a FIFO for reading from waiting for a writer.
	fd, err := unix.Openat(int(d.Fd()), base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return fmt.Errorf("restoring FIFO %s: replaced while being created", name)
	}
	return unix.Fchmod(fd, mode&0o7777)
}
