package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// excluded reports whether rel matches an exclude pattern.
func (s *Store) excluded(rel string) bool {
	if len(s.opts.exclude) == 0 {
		return false
	}
	base := path.Base(rel)
	for _, p := range s.opts.exclude {
		p = strings.TrimPrefix(strings.TrimSuffix(p, "/"), "/")
		if strings.Contains(p, "/") {
			if ok, _ := path.Match(p, rel); ok {
				return true
			}
		} else if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	return false
}

// openRoot opens the workspace directory.
func (s *Store) openRoot() (int, error) {
	fd, err := unix.Open(s.workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("snapshot: open workspace: %w", err)
	}
	return fd, nil
}

// openDirAt opens directory rel beneath rootfd without following any
// symlink on the way.
func openDirAt(rootfd int, rel string) (int, error) {
	if rel == "" {
		return unix.Openat(rootfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(rootfd, rel, &how)
	if err == nil || !errors.Is(err, unix.ENAMETOOLONG) {
		return fd, err
	}
	// Deeper than PATH_MAX: open it in chunks, each beneath the last.
	cur := rootfd
	defer func() {
		if cur != rootfd {
			unix.Close(cur)
		}
	}()
	for rest := rel; rest != ""; {
		chunk := rest
		if len(chunk) > 3000 {
			i := strings.LastIndexByte(chunk[:3000], '/')
			if i <= 0 {
				return -1, unix.ENAMETOOLONG
			}
			chunk = chunk[:i]
		}
		rest = strings.TrimPrefix(rest[len(chunk):], "/")
		next, err := unix.Openat2(cur, chunk, &how)
		if err != nil {
			return -1, err
		}
		if cur != rootfd {
			unix.Close(cur)
		}
		cur = next
	}
	fd, cur = cur, rootfd
	return fd, nil
}

func splitRel(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// entryFromStat fills the node fields that stat gives.
func entryFromStat(st *unix.Stat_t) *ientry {
	e := &ientry{ino: st.Ino, ctime: st.Ctim.Nano(), nlink: uint32(st.Nlink)}
	e.Mode = st.Mode & 0o7777
	e.Owner = ownerOf(st.Uid, st.Gid)
	e.MTime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC()
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type, e.Size = TypeFile, st.Size
	case unix.S_IFDIR:
		e.Type = TypeDir
	case unix.S_IFLNK:
		e.Type = TypeSymlink
	case unix.S_IFIFO:
		e.Type = TypeFIFO
	case unix.S_IFSOCK:
		e.Type = TypeSocket
	default:
		e.Type = TypeDevice
	}
	return e
}

// statUnchanged is the stat-cache test: can old's hash be reused for e?
func statUnchanged(old, e *ientry) bool {
	return old != nil && !old.racy && old.Type == e.Type && old.Size == e.Size && old.MTime.Equal(e.MTime) &&
		old.ctime == e.ctime && old.ino == e.ino && old.Mode == e.Mode && !old.Unreadable && !old.Unstored
}

// scanner carries one scan's shared state.
type scanner struct {
	s      *Store
	rootfd int
	old    *index
	racyAt int64 // mtimes at or after this (unix ns) are racy
	buf    []byte
	// dirents is scanDir's buffer for directory entries (buf is fill's).
	dirents []byte
	// changed is set when any entry differs from old.
	changed *atomic.Bool
}

// fill completes e (the entry at dirfd/name, path rel): reads a link,
// hashes and stores a file whose stat changed. vanished is true when the
// path disappeared meanwhile.
func (sc *scanner) fill(dirfd int, name, rel string, e *ientry) (vanished bool, err error) {
	old := sc.old.entries[rel]
	if e.MTime.UnixNano() >= sc.racyAt {
		e.racy = true
	}
	switch e.Type {
	case TypeSymlink:
		buf := make([]byte, 256)
		for {
			n, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
					return true, nil
				}
				return false, fmt.Errorf("snapshot: readlink %s: %w", quotePath(rel), err)
			}
			if n < len(buf) {
				e.Link = string(buf[:n])
				return false, nil
			}
			buf = make([]byte, 2*len(buf))
		}
	case TypeFile:
		if statUnchanged(old, e) {
			e.Hash = old.Hash
			return false, nil
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
				return true, nil
			}
			// Unreadable: record what stat says; it can be seen, not restored.
			sc.s.opts.log.Warn("snapshot: unreadable file", "path", rel, "err", err)
			e.Unreadable = true
			return false, nil
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return true, nil // replaced by something else meanwhile
		}
		*e = *withRacy(entryFromStat(&st), sc.racyAt)
		h, n, err := sc.s.putReader(f, st.Size, sc.buf)
		var le *LimitError
		if errors.As(err, &le) {
			le.Path = rel
			if le.after {
				// The call ran: record the content's hash without keeping
				// it (see limits.go).
				sc.s.opts.log.Warn("snapshot: content not stored: over a limit", "path", rel, "err", err)
				e.Hash, e.Unstored = h, true
				if n != e.Size {
					e.Size, e.racy = n, true
				}
				return false, nil
			}
			return false, le
		}
		if err != nil {
			if errors.Is(err, unix.EIO) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				sc.s.opts.log.Warn("snapshot: unreadable file", "path", rel, "err", err)
				e.Unreadable = true
				return false, nil
			}
			return false, fmt.Errorf("snapshot: storing %s: %w", quotePath(rel), err)
		}
		e.Hash = h
		if n != e.Size {
			// Changed while we read: what we stored is what we record, and
			// the next scan looks again.
			e.Size = n
			e.racy = true
		}
	}
	return false, nil
}

func withRacy(e *ientry, racyAt int64) *ientry {
	if e.MTime.UnixNano() >= racyAt {
		e.racy = true
	}
	return e
}

// entryEqual reports whether two entries are identical, stat fields
// included.
func entryEqual(a, b *ientry) bool {
	return a != nil && b != nil && a.Type == b.Type && a.Mode == b.Mode && a.Size == b.Size && a.MTime.Equal(b.MTime) &&
		a.Hash == b.Hash && a.Link == b.Link && a.Unreadable == b.Unreadable && a.Unstored == b.Unstored &&
		sameOwner(a.Owner, b.Owner) && a.ino == b.ino && a.ctime == b.ctime && a.racy == b.racy
}

// fullScan walks the whole workspace and returns its manifest, storing
// blobs of every file whose stat differs from old. When nothing at all
// differs it returns old itself, so callers can skip rewriting it.
func (s *Store) fullScan(ctx context.Context, old *index) (*index, error) {
	return s.fullScanAt(ctx, old, s.opts.now().Truncate(time.Second).UnixNano())
}

// fullScanAt is fullScan with mtimes at or after racyAt (unix ns) racy
// (an earlier moment than now only makes more entries racy).
func (s *Store) fullScanAt(ctx context.Context, old *index, racyAt int64) (*index, error) {
	rootfd, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootfd)
	entries, changed, err := s.walk(ctx, rootfd, old, racyAt, []string{""}, len(old.entries)+16)
	if err != nil {
		return nil, err
	}
	if !changed && len(entries) == len(old.entries) {
		return old, nil
	}
	return &index{entries: entries}, nil
}

// walk records everything beneath the directories roots (not the roots
// themselves), with the stat cache of old, on s.opts.workers goroutines.
// changed reports whether any entry recorded differs from old's.
func (s *Store) walk(ctx context.Context, rootfd int, old *index, racyAt int64, roots []string, size int) (map[string]*ientry, bool, error) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = append([]string(nil), roots...)
		active  int
		firstEr error
		result  = make(map[string]*ientry, size)
		changed atomic.Bool
	)
	worker := func() {
		sc := &scanner{s: s, rootfd: rootfd, old: old, racyAt: racyAt, buf: make([]byte, 64<<10), changed: &changed}
		// One directory's entries at a time, moved into result under the
		// lock taken anyway: a small map that stays in the cache, rather
		// than a per-worker copy of the tree grown and merged at the end.
		local := map[string]*ientry{}
		for {
			mu.Lock()
			for len(queue) == 0 && active > 0 && firstEr == nil {
				cond.Wait()
			}
			if len(queue) == 0 || firstEr != nil {
				cond.Broadcast()
				mu.Unlock()
				return
			}
			dir := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			active++
			mu.Unlock()

			subdirs, err := sc.scanDir(ctx, dir, local)

			mu.Lock()
			active--
			if err != nil && firstEr == nil {
				firstEr = err
			}
			for p, e := range local {
				result[p] = e
			}
			clear(local)
			queue = append(queue, subdirs...)
			cond.Broadcast()
			mu.Unlock()
		}
	}
	workers := s.opts.workers
	if len(roots) == 1 && roots[0] != "" && workers > 1 {
		// One subtree, usually small: start with one worker's worth.
		workers = min(workers, 2)
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker() }()
	}
	wg.Wait()
	if firstEr != nil {
		return nil, false, firstEr
	}
	return result, changed.Load(), nil
}

// scanDir records the children of dir into out and returns its
// subdirectories.
func (sc *scanner) scanDir(ctx context.Context, dir string, out map[string]*ientry) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("snapshot: scan: %w", context.Cause(ctx))
	}
	fd, err := openDirAt(sc.rootfd, dir)
	if err != nil {
		if dir != "" && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) {
			return nil, nil // vanished or replaced meanwhile
		}
		return nil, fmt.Errorf("snapshot: cannot read directory %s: %w", quotePath(dirLabel(dir)), err)
	}
	defer unix.Close(fd)
	if sc.dirents == nil {
		sc.dirents = make([]byte, 32<<10)
	}
	var subdirs, names []string
	for {
		n, err := unix.Getdents(fd, sc.dirents)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOENT) {
			break // removed while read
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot: reading directory %s: %w", quotePath(dirLabel(dir)), err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(sc.dirents[:n], -1, names[:0])
		for _, name := range names {
			rel := joinRel(dir, name)
			if sc.s.excluded(rel) {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return nil, fmt.Errorf("snapshot: stat %s: %w", quotePath(rel), err)
			}
			e := entryFromStat(&st)
			vanished, err := sc.fill(fd, name, rel, e)
			if err != nil {
				return nil, err
			}
			if vanished {
				continue
			}
			if old := sc.old.entries[rel]; entryEqual(old, e) {
				e = old // share the unchanged entry
			} else if sc.changed != nil {
				sc.changed.Store(true)
			}
			out[rel] = e
			if e.Type == TypeDir {
				subdirs = append(subdirs, rel)
			}
		}
	}
	return subdirs, nil
}

func dirLabel(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// statPath records the current state of one path (nil if absent),
// storing a file's content. A path under a symlink or a non-directory is
// absent.
func (s *Store) statPath(rootfd int, rel string, old *ientry) (*ientry, error) {
	dir, name := splitRel(rel)
	fd, err := openDirAt(rootfd, dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil, nil
		}
		return nil, fmt.Errorf("snapshot: %s: %w", quotePath(rel), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, fmt.Errorf("snapshot: stat %s: %w", quotePath(rel), err)
	}
	e := entryFromStat(&st)
	o := newIndex()
	if old != nil {
		o.entries[rel] = old
	}
	sc := &scanner{s: s, rootfd: rootfd, old: o, racyAt: s.opts.now().Truncate(time.Second).UnixNano()}
	vanished, err := sc.fill(fd, name, rel, e)
	if err != nil || vanished {
		return nil, err
	}
	return e, nil
}

// diffIndex returns the changes from a to b, sorted by path.
func diffIndex(a, b *index) []Change {
	if a == b {
		return nil
	}
	if a != nil && b.diffFrom != 0 && b.diffFrom == a.id.Load() {
		// An incremental scan's result: only the paths it looked at can
		// differ.
		var out []Change
		for _, p := range b.diffPaths {
			if c, ok := classify(p, nodeOf(a.entries[p]), nodeOf(b.entries[p])); ok {
				out = append(out, c)
			}
		}
		sortChanges(out)
		return out
	}
	var out []Change
	for _, p := range b.paths() {
		if c, ok := classify(p, nodeOf(a.entries[p]), nodeOf(b.entries[p])); ok {
			out = append(out, c)
		}
	}
	for _, p := range a.paths() {
		if _, ok := b.entries[p]; !ok {
			out = append(out, Change{Path: p, Op: OpDeleted, Old: nodeOf(a.entries[p])})
		}
	}
	sortChanges(out)
	return out
}

func nodeOf(e *ientry) *Node {
	if e == nil {
		return nil
	}
	n := e.Node
	return &n
}
