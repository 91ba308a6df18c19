package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

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
			if t.Unstored && !s.hasBlob(t.Hash) {
				return fmt.Errorf("snapshot: %s: its content was not kept when recorded, because it would have passed snapshot.max_call_bytes or snapshot.min_free_bytes; it cannot be restored", quotePath(it.Path))
			}
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

// apply makes every path of the plan match its target. It is idempotent.
// With force, a directory in the way is removed with whatever it holds, and
// a non-directory (a symlink included) where a parent directory must be is
// removed (the link itself, never what it points to) and replaced by a
// directory; without force that is an error wrapping ErrConflict. It
// returns the state it left for the paths it wrote (files; nil for removed
// ones), so that callers need not read them back.
//
// Nothing is ever done through a symlink: see restorer.
func (s *Store) apply(ctx context.Context, id string, items []planItem, force bool) (map[string]*ientry, error) {
	rootfd, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	r := &restorer{rootfd: rootfd, force: force, dirs: map[string]int{}, chown: os.Geteuid() == 0}
	defer r.close()
	var st unix.Stat_t
	if err := unix.Fstat(rootfd, &st); err != nil {
		return nil, fmt.Errorf("snapshot: workspace: %w", err)
	}
	r.owner = ownerOf(st.Uid, st.Gid)
	a := &applyRun{s: s, r: r, id: id, after: map[string]*ientry{}, idx: map[string]int{}, absent: map[string]bool{}}
	for i, it := range items {
		a.idx[it.Path] = i
		r.unlinkQuiet(tmpName(it.Path, id, i)) // leftovers of an interrupted run
	}
	desc := append([]planItem(nil), items...)
	sort.Slice(desc, func(i, j int) bool { return desc[i].Path > desc[j].Path })
	asc := append([]planItem(nil), items...)
	sort.Slice(asc, func(i, j int) bool { return asc[i].Path < asc[j].Path })
	if err := a.removeInTheWay(ctx, desc); err != nil {
		return a.after, err
	}
	if err := a.create(ctx, asc); err != nil {
		return a.after, err
	}
	if err := a.setDirMeta(desc); err != nil {
		return a.after, err
	}
	return a.after, nil
}

// applyRun is the state of one apply: the state it left for the paths it
// wrote (after), each item's index in the plan (for its temporary name)
// and the paths found or made absent.
type applyRun struct {
	s      *Store
	r      *restorer
	id     string
	after  map[string]*ientry
	idx    map[string]int
	absent map[string]bool
}

// removeInTheWay is step 1: it removes what is in the way of the plan,
// deepest first (desc).
func (a *applyRun) removeInTheWay(ctx context.Context, desc []planItem) error {
	for _, it := range desc {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, err := lstatBeneath(a.r.rootfd, it.Path)
		if err != nil {
			return fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		if cur == "" {
			a.absent[it.Path] = true
			continue // absent, or under a symlink or non-directory that goes first
		}
		if it.Target != nil && cur == it.Target.Type && (cur == TypeDir || cur == TypeFile) {
			continue // replaced in place (files by rename) below
		}
		if err := a.r.remove(it.Path, cur == TypeDir); err != nil {
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return fmt.Errorf("snapshot: restore %s: directory holds paths that were never recorded (excluded?); remove them first: %w", quotePath(it.Path), err)
			}
			return fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		a.absent[it.Path] = true
		if it.Target == nil {
			a.after[it.Path] = nil
		}
		a.s.hook("apply-removed")
	}
	return nil
}

// create is step 2: it makes every target, shallowest first (asc).
func (a *applyRun) create(ctx context.Context, asc []planItem) error {
	buf := make([]byte, 1<<20)
	for _, it := range asc {
		if it.Target == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		made, err := a.createOne(it, buf)
		if err != nil {
			return err
		}
		if made != nil {
			a.after[it.Path] = made
		}
		a.s.hook("apply-created")
	}
	return nil
}

// createOne makes one target: a directory (its owner, mode and time are
// set in step 3), a file written in place when nothing is there or else
// beside it and renamed over, a symlink or FIFO made beside it and renamed
// over. made is the file's state when it need not be read back.
func (a *applyRun) createOne(it planItem, buf []byte) (made *ientry, err error) {
	r, t := a.r, it.Target
	dir, base := splitRel(it.Path)
	dfd, err := r.dir(dir, true)
	if err != nil {
		return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
	}
	_, tmp := splitRel(tmpName(it.Path, a.id, a.idx[it.Path]))
	switch t.Type {
	case TypeDir:
		if err := unix.Mkdirat(dfd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
	case TypeFile:
		name := tmp
		if a.absent[it.Path] {
			name = base // nothing to replace: write in place
		}
		made, err = a.s.writeBlobAt(dfd, name, t, r.chownTo(t), buf)
		if err != nil {
			unix.Unlinkat(dfd, name, 0)
			return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		if name != base {
			if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
				unix.Unlinkat(dfd, tmp, 0)
				return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
			}
			made = nil // rename changes ctime: read it back later
		}
	case TypeSymlink, TypeFIFO:
		var err error
		if t.Type == TypeSymlink {
			if err = unix.Symlinkat(t.Link, dfd, tmp); err == nil {
				err = r.setMeta(dfd, tmp, -1, t, false)
			}
		} else {
			err = r.mkfifoAt(dfd, tmp, t)
		}
		if err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
		if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return nil, fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
	default:
		return nil, fmt.Errorf("snapshot: %s: a %s cannot be restored", quotePath(it.Path), t.Type)
	}
	return made, nil
}

// setDirMeta is step 3: directory owners, modes and times last, deepest
// first (desc), so a read-only directory does not stop its children being
// written and writing children does not move its mtime.
func (a *applyRun) setDirMeta(desc []planItem) error {
	for _, it := range desc {
		if it.Target == nil || it.Target.Type != TypeDir {
			continue
		}
		dir, base := splitRel(it.Path)
		err := func() error {
			pfd, err := a.r.dir(dir, false)
			if err != nil {
				return err
			}
			fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return a.r.setMeta(pfd, base, fd, it.Target, true)
		}()
		if err != nil {
			return fmt.Errorf("snapshot: restore %s: %w", quotePath(it.Path), err)
		}
	}
	return nil
}

// restorer makes the changes of one restore beneath the workspace without
// ever following a symlink, whoever swapped one in and whenever: every
// directory is opened with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (or, one
// level at a time, with O_NOFOLLOW), and every change is made relative to
// such a descriptor on a final name that is never followed (mkdirat,
// unlinkat, renameat, symlinkat, mkfifoat, openat with O_CREAT|O_EXCL,
// fchownat and utimensat with AT_SYMLINK_NOFOLLOW, fchown and fchmod on
// descriptors opened with O_NOFOLLOW). So a restore changes exactly the
// paths of its plan, plus missing parent directories it must create.
type restorer struct {
	rootfd int
	force  bool
	dirs   map[string]int // open directories by path ("" is rootfd)
	// owner is the workspace root's: paths recorded without an owner and
	// parent directories the restore creates get it.
	owner *Owner
	// chown is set when running as root, the only case where owners can
	// (and must) be restored: root's new files would otherwise be root's.
	chown bool
}

func (r *restorer) close() {
	for _, fd := range r.dirs {
		unix.Close(fd)
	}
	unix.Close(r.rootfd)
}

func (r *restorer) ownerFor(n *Node) *Owner {
	if n.Owner != nil {
		return n.Owner
	}
	return r.owner
}

// chownTo is the owner to give a restored path, or nil when owners are
// not restored (not running as root).
func (r *restorer) chownTo(n *Node) *Owner {
	if !r.chown {
		return nil
	}
	return r.ownerFor(n)
}

func absentErr(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV)
}

// dir opens directory rel (cached). With create, a missing directory on
// the way is made, and one that is something else (a symlink, a file) is a
// conflict, or with force is removed and made a directory.
func (r *restorer) dir(rel string, create bool) (int, error) {
	if rel == "" {
		return r.rootfd, nil
	}
	if fd, ok := r.dirs[rel]; ok {
		return fd, nil
	}
	fd, err := openDirAt(r.rootfd, rel)
	if err != nil {
		if !create || !absentErr(err) {
			return -1, err
		}
		parent, base := splitRel(rel)
		pfd, err := r.dir(parent, true)
		if err != nil {
			return -1, err
		}
		if fd, err = r.makeDir(pfd, rel, base); err != nil {
			return -1, err
		}
	}
	r.dirs[rel] = fd
	return fd, nil
}

// makeDir makes base (path rel) in pfd a real directory and opens it.
func (r *restorer) makeDir(pfd int, rel, base string) (int, error) {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	create := errors.Is(err, unix.ENOENT)
	switch {
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		t := entryFromStat(&st).Type
		if !r.force {
			return -1, fmt.Errorf("%s is now a %s where a directory must be; remove it first (undo --force replaces it, leaving what a symlink points to alone): %w",
				quotePath(rel), t, ErrConflict)
		}
		// The name itself goes: for a symlink, the link, never its target.
		if err := unix.Unlinkat(pfd, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return -1, err
		}
		create = true
	case err != nil && !create:
		return -1, err
	}
	if create {
		if err := unix.Mkdirat(pfd, base, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if create && r.chown {
		if err := unix.Fchown(fd, int(r.owner.UID), int(r.owner.GID)); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// remove removes rel (with force, a directory with everything in it). A
// path under a symlink or non-directory is not there: nothing is done.
func (r *restorer) remove(rel string, isDir bool) error {
	parent, base := splitRel(rel)
	pfd, err := r.dir(parent, false)
	if err != nil {
		if absentErr(err) {
			return nil
		}
		return err
	}
	if isDir {
		r.forget(rel)
	}
	if r.force {
		return removeAllAt(pfd, base)
	}
	err = unix.Unlinkat(pfd, base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// forget closes the cached descriptors of rel and what is under it.
func (r *restorer) forget(rel string) {
	for p, fd := range r.dirs {
		if p == rel || strings.HasPrefix(p, rel+"/") {
			unix.Close(fd)
			delete(r.dirs, p)
		}
	}
}

// unlinkQuiet removes a non-directory if it is there, ignoring errors.
func (r *restorer) unlinkQuiet(rel string) {
	parent, base := splitRel(rel)
	if pfd, err := r.dir(parent, false); err == nil {
		unix.Unlinkat(pfd, base, 0)
	}
}

// removeAllAt removes name in dirfd and, for a directory, everything in
// it, following no symlink (a symlink is removed as itself).
func removeAllAt(dirfd int, name string) error {
	for attempt := 0; ; attempt++ {
		err := unix.Unlinkat(dirfd, name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EISDIR) {
			return err
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			if (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) && attempt < 3 {
				continue // swapped meanwhile: unlink it as what it is now
			}
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		names, rerr := f.Readdirnames(-1)
		for _, n := range names {
			if err := removeAllAt(fd, n); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		if rerr != nil {
			return rerr
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) || attempt >= 3 {
			return err
		}
	}
}

// setMeta gives name in dirfd t's owner (when running as root), mode (when
// fd >= 0: through that descriptor, opened without following) and mtime,
// never following a symlink. Owner goes first: chown clears setuid bits.
func (r *restorer) setMeta(dirfd int, name string, fd int, t *Node, mode bool) error {
	if r.chown {
		o := r.ownerFor(t)
		var err error
		if fd >= 0 {
			err = unix.Fchown(fd, int(o.UID), int(o.GID))
		} else {
			err = unix.Fchownat(dirfd, name, int(o.UID), int(o.GID), unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil {
			return err
		}
	}
	if mode && fd >= 0 {
		if err := unix.Fchmod(fd, t.Mode&0o7777); err != nil {
			return err
		}
	}
	if !t.MTime.IsZero() {
		ts := unix.NsecToTimespec(t.MTime.UnixNano())
		if err := unix.UtimesNanoAt(dirfd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
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
		if absentErr(err) {
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

// writeBlobAt streams blob t.Hash into a new file name in dirfd (created
// with O_EXCL, so never through a symlink), verifying the content, gives
// it owner (unless nil), t's mode and mtime, and returns its state.
func (s *Store) writeBlobAt(dirfd int, name string, t *Node, owner *Owner, buf []byte) (*ientry, error) {
	src, err := s.openBlob(t.Hash)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	dst := os.NewFile(uintptr(fd), name)
	defer dst.Close()
	vw := &verifyingWriter{w: dst, h: sha256.New()}
	if _, err := io.CopyBuffer(vw, src, buf); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(vw.h.Sum(nil)); got != t.Hash {
		return nil, fmt.Errorf("blob %s: content does not match its hash: %w", t.Hash[:12], ErrCorrupt)
	}
	if owner != nil {
		if err := unix.Fchown(fd, int(owner.UID), int(owner.GID)); err != nil {
			return nil, err
		}
	}
	if err := unix.Fchmod(fd, t.Mode&0o7777); err != nil {
		return nil, err
	}
	if !t.MTime.IsZero() {
		ts := unix.NsecToTimespec(t.MTime.UnixNano())
		if err := unix.UtimesNanoAt(dirfd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	e := entryFromStat(&st)
	e.Hash = t.Hash
	e.racy = true // written just now
	return e, dst.Close()
}

// mkfifoAt makes a FIFO at name in dirfd with t's owner, mode and mtime.
func (r *restorer) mkfifoAt(dirfd int, name string, t *Node) error {
	if err := unix.Mkfifoat(dirfd, name, t.Mode&0o7777); err != nil {
		return err
	}
	// Set the exact mode (the umask trimmed it) through an fd opened
	// without following links: a name swapped for a symlink by a
	// concurrent writer must not redirect the chmod outside the root.
	// O_NONBLOCK keeps opening a FIFO for reading from waiting for a writer.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
	return r.setMeta(dirfd, name, fd, t, true)
}
