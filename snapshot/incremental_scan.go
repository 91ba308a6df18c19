package snapshot

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// incrementalScan computes the manifest a full scan would return, from
// base (an index the watcher vouches for) and the paths reported since it
// was made: each is looked at again (lstat, and a read when its stat
// changed); a directory that is new at its path is walked whole; a path
// that is gone is dropped with everything beneath it. Entries base
// records as racy, unreadable or unstored are looked at again too, as a
// full scan would. old is the index the caller has (base or a clone of
// it): its entries are the stat cache, and it is returned when nothing
// differs from it. Mtimes at or after racyAt (unix ns) are racy.
//
// The scan runs in rounds until no work is left: look at every queued
// path ([incScan.visit]), walk the directories that are new
// ([incScan.walkNew]), drop what was beneath directories that went
// ([incScan.sweep]). Each step may queue more paths: the other names of
// a hard-linked file that changed.
func (s *Store) incrementalScan(ctx context.Context, old, base *index, dirty map[string]bool, revisit map[string]struct{}, racyAt int64) (*index, *scanDelta, error) {
	rootfd, err := s.openRoot()
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(rootfd)
	x := newIncScan(s, rootfd, old, base, dirty, racyAt)
	defer x.closeDir()
	x.queueAll(dirty, revisit)

	for i := 0; ; {
		for ; i < len(x.work); i++ {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("snapshot: scan: %w", context.Cause(ctx))
			}
			if err := x.visit(x.work[i]); err != nil {
				return nil, nil, err
			}
		}
		if len(x.walkRoots) == 0 && len(x.dropped) == 0 {
			break
		}
		if err := x.walkNew(ctx); err != nil {
			return nil, nil, err
		}
		x.sweep()
		if i == len(x.work) {
			break
		}
	}
	return x.finish()
}

// incScan is the state of one incremental scan: the queue of paths to
// look at, the result being built from base, and what it changed.
type incScan struct {
	s      *Store
	sc     *scanner
	rootfd int
	old    *index
	base   *index
	dirty  map[string]bool // the watcher's report
	racyAt int64

	work   []string        // paths to look at, in order
	queued map[string]bool // the same, as a set

	// res shares base's map until the first change (a copy of a large
	// manifest is the biggest fixed cost of an incremental scan): owned
	// says it has its own.
	res     *index
	owned   bool
	delta   *scanDelta
	changed bool // res differs from old

	walkRoots []string        // new directories, walked at the end of a round
	walked    map[string]bool // the same, as a set
	dropped   map[string]bool // directories whose old contents go
	fromWalk  map[string]bool // entries a walk of a new directory found
	excl      map[string]bool // memo of excludedPath

	dirfd   int    // the open directory visit last used, or -1
	dirOpen string // its path
}

func newIncScan(s *Store, rootfd int, old, base *index, dirty map[string]bool, racyAt int64) *incScan {
	return &incScan{
		s:        s,
		sc:       &scanner{s: s, rootfd: rootfd, old: old, racyAt: racyAt, buf: make([]byte, 64<<10)},
		rootfd:   rootfd,
		old:      old,
		base:     base,
		dirty:    dirty,
		racyAt:   racyAt,
		res:      &index{entries: base.entries},
		delta:    &scanDelta{},
		changed:  old != base,
		walked:   map[string]bool{},
		dropped:  map[string]bool{},
		fromWalk: map[string]bool{},
		excl:     map[string]bool{},
		dirfd:    -1,
	}
}

// queueAll queues the reported paths and the ones to revisit, parents
// before children: a child's fate depends on its parent's.
func (x *incScan) queueAll(dirty map[string]bool, revisit map[string]struct{}) {
	x.work = make([]string, 0, len(dirty)+len(revisit))
	x.queued = make(map[string]bool, len(dirty)+len(revisit))
	for p := range dirty {
		x.queue(p)
	}
	for p := range revisit {
		x.queue(p)
	}
	sort.Slice(x.work, func(i, j int) bool {
		di, dj := strings.Count(x.work[i], "/"), strings.Count(x.work[j], "/")
		if di != dj {
			return di < dj
		}
		return x.work[i] < x.work[j]
	})
}

func (x *incScan) queue(p string) {
	if !x.queued[p] {
		x.queued[p] = true
		x.work = append(x.work, p)
	}
}

// visit looks at one path again and records what is there now.
func (x *incScan) visit(p string) error {
	if underAny(p, x.walked) || x.s.excludedPath(p, x.excl) {
		return nil
	}
	parent, name := splitRel(p)
	if parent != "" {
		if pe := x.res.entries[parent]; pe == nil || pe.Type != TypeDir {
			x.remove(p)
			return nil
		}
	}
	dirfd, gone, err := x.openParent(parent)
	if err != nil {
		return err
	}
	if gone {
		x.remove(p)
		return nil
	}
	e, gone, err := x.lookAt(dirfd, name, p)
	if err != nil {
		return err
	}
	if gone {
		x.remove(p)
		return nil
	}
	x.record(p, e)
	return nil
}

// openParent returns a descriptor of the directory parent, reusing the
// one the previous visit opened when it is the same. gone is true when
// parent is no longer a directory reachable beneath the root.
func (x *incScan) openParent(parent string) (fd int, gone bool, err error) {
	if x.dirfd >= 0 && x.dirOpen == parent {
		return x.dirfd, false, nil
	}
	x.closeDir()
	fd, err = openDirAt(x.rootfd, parent)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, true, nil
		}
		return -1, false, fmt.Errorf("snapshot: cannot read directory %s: %w", quotePath(dirLabel(parent)), err)
	}
	x.dirfd, x.dirOpen = fd, parent
	return fd, false, nil
}

func (x *incScan) closeDir() {
	if x.dirfd >= 0 {
		unix.Close(x.dirfd)
		x.dirfd = -1
	}
}

// lookAt returns the entry for dirfd/name (path p): its stat, and its
// content stored when the stat changed. gone is true when nothing is
// there (any more).
func (x *incScan) lookAt(dirfd int, name, p string) (e *ientry, gone bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("snapshot: stat %s: %w", quotePath(p), err)
	}
	e = entryFromStat(&st)
	vanished, err := x.sc.fill(dirfd, name, p, e)
	if err != nil {
		return nil, false, err
	}
	return e, vanished, nil
}

// record puts the entry found at p into the result: a directory new at
// p is queued for a walk, an old directory's contents for the sweep, and
// the file's other names for a visit.
func (x *incScan) record(p string, e *ientry) {
	nlink := e.nlink
	if o := x.old.entries[p]; entryEqual(o, e) {
		e = o
	}
	prev := x.res.entries[p]
	if prev != e {
		x.set(p, e, prev)
	}
	if x.old.entries[p] != e {
		x.changed = true
	}
	wasDir := prev != nil && prev.Type == TypeDir
	// A directory is walked whole when it is new at this path, or when
	// the watcher saw it created or moved here (its inode number may be
	// a reused one).
	if e.Type == TypeDir && (!wasDir || prev.ino != e.ino || x.dirty[p]) {
		x.walkRoots = append(x.walkRoots, p)
		x.walked[p] = true
	}
	if wasDir && (e.Type != TypeDir || x.walked[p]) {
		x.dropped[p] = true
	}
	// Another name of the same file changed with it (its ctime at least):
	// look at every name the inode map knows.
	x.linked(e, nlink)
	if prev != nil && prev != e {
		x.linked(prev, prev.nlink)
	}
}

// walkNew walks the new directories whole and records what it finds; a
// file found there may be another name of a file elsewhere (a hard link
// moved in with it).
func (x *incScan) walkNew(ctx context.Context) error {
	found, _, err := x.s.walk(ctx, x.rootfd, x.old, x.racyAt, x.walkRoots, 16)
	if err != nil {
		return err
	}
	x.walkRoots = nil
	for p, e := range found {
		x.set(p, e, x.res.entries[p])
		x.fromWalk[p] = true
		if x.old.entries[p] != e {
			x.changed = true
		}
		x.linked(e, e.nlink)
	}
	return nil
}

// sweep drops the old contents of directories that went or were
// replaced (what a walk of the new directory found stays).
func (x *incScan) sweep() {
	dropped := x.dropped
	x.dropped = map[string]bool{}
	if len(dropped) == 0 {
		return
	}
	var prefixes []string
	for d := range dropped {
		prefixes = append(prefixes, d+"/")
	}
	beneath := func(p string) bool {
		if len(prefixes) > 4 {
			return underAny(p, dropped)
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
	for p, prev := range x.res.entries {
		if beneath(p) && !x.fromWalk[p] {
			x.own()
			delete(x.res.entries, p)
			x.drop(p, prev)
		}
	}
}

// finish returns old when nothing differs from it, else the result with
// the paths that differ from old when old is base.
func (x *incScan) finish() (*index, *scanDelta, error) {
	if !x.changed && len(x.res.entries) == len(x.old.entries) {
		return x.old, x.delta, nil
	}
	x.own() // callers may change what they get (guard does)
	if x.old == x.base {
		seen := make(map[string]bool, len(x.delta.set)+len(x.delta.gone))
		for _, l := range [][]pathEntry{x.delta.set, x.delta.gone} {
			for _, pe := range l {
				if !seen[pe.path] {
					seen[pe.path] = true
					x.res.diffPaths = append(x.res.diffPaths, pe.path)
				}
			}
		}
		x.res.diffFrom = x.old.ident()
	}
	return x.res, x.delta, nil
}

// own gives the result its own map before its first change.
func (x *incScan) own() {
	if x.owned {
		return
	}
	if m := x.s.cap.takeSpare(x.base); m != nil {
		x.res.entries = m
	} else {
		x.res.entries = maps.Clone(x.base.entries)
	}
	x.owned = true
}

// set records e at p (prev: the result's entry before).
func (x *incScan) set(p string, e, prev *ientry) {
	x.own()
	x.res.entries[p] = e
	x.delta.set = append(x.delta.set, pathEntry{path: p, e: e, prev: prev})
}

// remove drops p from the result, and marks a directory's contents for
// the sweep.
func (x *incScan) remove(p string) {
	prev := x.res.entries[p]
	if prev == nil {
		return
	}
	x.own()
	delete(x.res.entries, p)
	x.drop(p, prev)
	if prev.Type == TypeDir {
		x.dropped[p] = true
	}
}

// drop notes that p (entry prev) left the result.
func (x *incScan) drop(p string, prev *ientry) {
	x.delta.gone = append(x.delta.gone, pathEntry{path: p, e: prev})
	x.changed = true
	x.linked(prev, prev.nlink)
}

// linked queues the other names of a file that has more than one: a
// change through one name (even one that is gone now) changed them.
func (x *incScan) linked(e *ientry, nlink uint32) {
	if e.Type != TypeFile || nlink == 1 {
		return // (0: read from disk, not known)
	}
	for _, q := range x.s.cap.pathsOf(e.ino) {
		x.queue(q)
	}
}

// underAny reports whether a parent directory of p is in set.
func underAny(p string, set map[string]bool) bool {
	for d, _ := splitRel(p); d != ""; d, _ = splitRel(d) {
		if set[d] {
			return true
		}
	}
	return false
}
