package builtin

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// maxQueuedDirFds bounds the directory fds a walk keeps open for queued
// directories; beyond it, directories are reopened through the root.
const maxQueuedDirFds = 256

// fileEntry is a directory entry found by a parallel walk. The directory's
// fd is open for the duration of the callback only.
type fileEntry struct {
	dirfd int
	dir   string // relative to the walk's root ("." for the root)
	name  string
	typ   uint8 // unix.DT_*; never DT_UNKNOWN
}

// rel is the entry's path relative to the walk's root.
func (e fileEntry) rel() string {
	if e.dir == "." {
		return e.name
	}
	return e.dir + "/" + e.name
}

// parallelWalk visits every directory below start (relative to root) in
// parallel, calling visit for every entry (directories it walks into
// included) from the worker that listed it.
// Directories are opened through root (so they stay inside it); files are
// meant to be opened with openEntry, one openat of a single name with
// O_NOFOLLOW, so they cannot lead outside either. VCS directories are
// skipped; gitignore applies .gitignore files; skipDir, when set, can prune
// more (it gets the directory's path relative to root). worker is the
// index of the calling worker, for per-worker buffers. Entries a deny
// rule covers (hide, which may be nil) are never visited, and denied
// directories never walked. Errors reading a directory skip it, like rg.
// The only error returned is ctx's or the start directory's.
func parallelWalk(ctx context.Context, root *os.Root, start string, workers int, gitignore bool, hide *denyFilter,
	skipDir func(rel string) bool, visit func(worker int, e fileEntry)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type dirJob struct {
		rel string
		ign ignoreSet
		fd  int // open directory, or -1: open rel through root
	}
	startDir, err := root.Open(start)
	if err != nil {
		return err
	}
	startDir.Close()
	var startIgn ignoreSet
	if gitignore {
		startIgn = ignoresFor(root.FS(), start)
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []dirJob{{start, startIgn, -1}}
		openFds atomic.Int64 // directory fds held by queued jobs
		pending = 1
	)
	process := func(worker int, j dirJob, buf []byte) []dirJob {
		fd := j.fd
		if fd >= 0 {
			openFds.Add(-1)
			defer unix.Close(fd)
		}
		if ctx.Err() != nil {
			return nil
		}
		if fd < 0 {
			d, err := root.Open(j.rel)
			if err != nil {
				return nil
			}
			defer d.Close()
			fd = int(d.Fd())
		}
		ign := j.ign
		if gitignore && j.rel != start {
			ign = ign.withFileAt(fd, j.rel)
		}
		var subdirs []dirJob
		readDirents(fd, buf, func(name string, typ uint8) {
			if typ == unix.DT_UNKNOWN {
				typ = lstatType(fd, name)
			}
			e := fileEntry{dirfd: fd, dir: j.rel, name: name, typ: typ}
			rel := e.rel()
			isDir := typ == unix.DT_DIR
			if isDir && vcsDirs[name] {
				return
			}
			if ign.ignored(rel, isDir) {
				return
			}
			if hide != nil {
				if typ == unix.DT_LNK && hide.hidesLink(relTo(start, rel)) || hide.hides(relTo(start, rel)) {
					return
				}
			}
			if isDir {
				if skipDir != nil && skipDir(rel) {
					return
				}
				visit(worker, e)
				// Open the subdirectory by its single name, not following
				// a symlink, while its parent is open: cheaper than a
				// walk from the root, and just as contained. Bound the
				// fds held by the queue.
				cfd := -1
				if openFds.Load() < maxQueuedDirFds {
					if f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
						cfd = f
						openFds.Add(1)
					}
				}
				subdirs = append(subdirs, dirJob{rel, ign, cfd})
				return
			}
			visit(worker, e)
		})
		return subdirs
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 {
					cond.Wait()
				}
				if len(queue) == 0 {
					mu.Unlock()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				subs := process(w, j, buf)
				mu.Lock()
				queue = append(queue, subs...)
				pending += len(subs) - 1
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// readDirents lists the directory open at fd, calling fn for each entry
// other than . and ..
func readDirents(fd int, buf []byte, fn func(name string, typ uint8)) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		b := buf[:n]
		for len(b) > 0 {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			if len(b) < 19 {
				return
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return
			}
			typ := b[18]
			nameb := b[19:reclen]
			if i := indexNUL(nameb); i >= 0 {
				nameb = nameb[:i]
			}
			b = b[reclen:]
			name := string(nameb)
			if name == "." || name == ".." || name == "" {
				continue
			}
			fn(name, typ)
		}
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// lstatType finds the type of name in the directory fd without following
// a symlink.
func lstatType(fd int, name string) uint8 {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return unix.DT_UNKNOWN
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

// openEntry opens a regular file found by parallelWalk: a single name
// relative to its directory, never following a symlink, never blocking on
// a FIFO. It returns the fd and the file's stat; the caller closes fd.
func openEntry(e fileEntry) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(e.dirfd, e.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// readAllFd reads the file open at fd, whose size is size, into buf
// (grown when needed) and returns the bytes read.
func readAllFd(fd int, size int64, buf []byte) []byte {
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+512)
	}
	buf = buf[:cap(buf)]
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	return buf[:n]
}

// withFileAt is withFile for a directory already open at fd.
func (s ignoreSet) withFileAt(fd int, dir string) ignoreSet {
	gfd, err := unix.Openat(fd, ".gitignore", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return s
	}
	defer unix.Close(gfd)
	var st unix.Stat_t
	if unix.Fstat(gfd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 1<<20 {
		return s
	}
	data := readAllFd(gfd, st.Size, nil)
	return s.withData(data, dir)
}

// statMtime returns the entry's modification time in nanoseconds and its
// stat, without following a symlink.
func statEntry(e fileEntry) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(e.dirfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// relTo returns rel relative to base (both relative to the same root).
func relTo(base, rel string) string {
	if base == "." {
		return rel
	}
	return strings.TrimPrefix(rel, base+"/")
}
