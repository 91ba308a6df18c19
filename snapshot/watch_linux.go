//go:build linux

package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/mountinfo"
)

// watcher reports which paths of the workspace changed, from fanotify
// events on the workspace's whole filesystem (FAN_MARK_FILESYSTEM with
// FAN_REPORT_DFID_NAME|FAN_REPORT_FID): a mount mark cannot report
// directory-entry events and misses writes made through the bind mounts
// of containers, an inode mark would be one per directory. Events are
// queued by the kernel inside the writer's system call, so once a command
// has exited, draining the descriptor until EAGAIN collects everything it
// did (take).
//
// A goroutine drains the queue while no scan asks, so that it does not
// overflow between calls; events are turned into workspace-relative paths
// as they are read. What the watcher cannot vouch for (a queue overflow, a
// handle it cannot resolve, a workspace that moved or gained a mount)
// makes the next take report lost, and the caller scans everything.
type watcher struct {
	fd     int // fanotify group
	rootfd int // the workspace: mount fd for open_by_handle_at (not O_PATH: EBADF)
	wake   int // eventfd: stop the goroutine
	ws     string
	done   chan struct{}

	mu    sync.Mutex
	dirty map[string]bool // path → walk it whole (a directory created or moved there)
	lost  string          // why the dirty set cannot be trusted ("" = it can)
	// cache maps a directory's handle to its workspace-relative path
	// (outsideDir for a directory outside the workspace). Directory renames
	// and removals anywhere on the filesystem clear it.
	cache map[string]string
	// inodes maps the inode of every file the last scan recorded to its
	// paths, for events named by an inode alone (a link count changed) or
	// through a hard link outside the workspace (set by the capture).
	inodes map[uint64][]string
	buf    []byte

	// recent collects the paths marked since the live guard last looked
	// (recentPaths), while it asks for them (followRecent); poke wakes it.
	follow atomic.Bool
	recent map[string]bool
	poke   chan struct{}

	// feeds are the subscribers to directory-entry changes (entryFeed).
	feeds []*entryFeed

	events   atomic.Int64 // events read
	inside   atomic.Int64 // events that marked a workspace path
	resolves atomic.Int64 // open_by_handle_at calls
}

const outsideDir = "\x00outside"

// watchMask is what the group asks for: every change to a directory entry,
// to content (MODIFY; CLOSE_WRITE for writes through a shared mapping, which
// raise no MODIFY but close the file when unmapped) and to attributes.
const watchMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO |
	unix.FAN_MODIFY | unix.FAN_ATTRIB | unix.FAN_CLOSE_WRITE | unix.FAN_ONDIR

// startWatcher starts watching the filesystem of ws (a real path). It fails
// without CAP_SYS_ADMIN, on a filesystem that cannot report file handles,
// and when another filesystem is mounted beneath ws (its changes would not
// be seen).
func startWatcher(ws string) (*watcher, error) {
	if m, err := mountsBeneath(ws); err != nil {
		return nil, err
	} else if m != "" {
		return nil, fmt.Errorf("snapshot: change capture: %s is mounted inside the workspace", m)
	}
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME|unix.FAN_REPORT_FID,
		unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("snapshot: change capture: fanotify_init: %w", err)
	}
	w := &watcher{fd: fd, rootfd: -1, wake: -1, ws: ws, done: make(chan struct{}), dirty: map[string]bool{},
		cache: map[string]string{}, buf: make([]byte, 64<<10),
		recent: map[string]bool{}, poke: make(chan struct{}, 1)}
	fail := func(err error) (*watcher, error) {
		w.closeFDs()
		return nil, fmt.Errorf("snapshot: change capture: %w", err)
	}
	if w.rootfd, err = unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fail(err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, watchMask, unix.AT_FDCWD, ws); err != nil {
		return fail(fmt.Errorf("fanotify_mark: %w", err))
	}
	if w.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail(err)
	}
	go w.run()
	return w, nil
}

func (w *watcher) closeFDs() {
	for _, fd := range []int{w.fd, w.rootfd, w.wake} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// close stops the goroutine and releases the group.
func (w *watcher) close() {
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	unix.Write(w.wake, one[:])
	<-w.done
	w.mu.Lock()
	w.closeFDs()
	w.fd = -1
	w.mu.Unlock()
}

func (w *watcher) run() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			w.mu.Lock()
			w.markLost("poll: " + err.Error())
			w.mu.Unlock()
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents != 0 {
			w.mu.Lock()
			w.drainLocked()
			w.mu.Unlock()
		}
	}
}

func (w *watcher) markLost(why string) {
	if w.lost == "" {
		w.lost = why
	}
	for _, f := range w.feeds {
		if f.lost == "" {
			f.lost = why
		}
	}
	// The live guard cannot know what was lost (an overflow on purpose
	// hides a plant's own event): the whole workspace is recent.
	w.markRecent("", true)
}

// entryFeed collects, for one subscriber, the workspace paths whose
// directory entry was created, removed or moved in or out since it last
// took them (path → the entry is a directory), or why they cannot be
// trusted. An event is queued inside the system call that changed the
// entry, and take drains the queue first, so a path changed before take
// was called is in what it returns (or take reports lost).
type entryFeed struct {
	w     *watcher
	paths map[string]bool
	lost  string
}

// subscribe adds a feed; it holds what happens from now on.
func (w *watcher) subscribe() *entryFeed {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := &entryFeed{w: w, paths: map[string]bool{}}
	if w.fd < 0 {
		f.lost = "watcher closed"
	}
	w.feeds = append(w.feeds, f)
	return f
}

// take drains the queue and returns the feed's paths and lost reason,
// starting the next set empty.
func (f *entryFeed) take() (map[string]bool, string) {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, "watcher closed"
	}
	w.drainPlacedLocked()
	paths, lost := f.paths, f.lost
	f.paths, f.lost = map[string]bool{}, ""
	return paths, lost
}

// unsubscribe removes the feed.
func (f *entryFeed) unsubscribe() {
	w := f.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.feeds = slices.DeleteFunc(w.feeds, func(x *entryFeed) bool { return x == f })
}

// maxFeedPaths bounds what a feed holds between takes; beyond it the
// feed reports lost (its subscriber walks instead).
const maxFeedPaths = 200_000

func (w *watcher) feedEntry(p string, isDir bool) {
	for _, f := range w.feeds {
		if f.lost != "" {
			continue
		}
		if len(f.paths) >= maxFeedPaths {
			f.lost, f.paths = "more than 200000 changed entries", map[string]bool{}
			continue
		}
		f.paths[p] = f.paths[p] || isDir
	}
}

const entryMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO

// take drains every queued event and returns the paths marked since the
// previous take, or lost (non-empty) when they cannot be trusted. Either
// way the next set starts empty.
func (w *watcher) take() (dirty map[string]bool, lost string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, "watcher closed"
	}
	w.drainPlacedLocked()
	dirty, lost = w.dirty, w.lost
	w.dirty, w.lost = map[string]bool{}, ""
	return dirty, lost
}

// setInodes replaces the inode → paths map (see watcher.inodes).
func (w *watcher) setInodes(m map[uint64][]string) {
	w.mu.Lock()
	w.inodes = m
	w.mu.Unlock()
}

// updateInodes applies fn to the inode map under the watcher's lock.
func (w *watcher) updateInodes(fn func(m map[uint64][]string)) {
	w.mu.Lock()
	if w.inodes != nil {
		fn(w.inodes)
	}
	w.mu.Unlock()
}

// pathsOf returns the paths the inode map knows for ino.
func (w *watcher) pathsOf(ino uint64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.inodes[ino]...)
}

// drainPlacedLocked reads the queued events and marks everything lost
// when the workspace is no longer where the paths say it is.
func (w *watcher) drainPlacedLocked() {
	w.drainLocked()
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(w.rootfd)); err != nil || p != w.ws {
		w.markLost("the workspace moved")
	}
}

// drainLocked reads events until the queue is empty.
func (w *watcher) drainLocked() {
	for w.fd >= 0 {
		n, err := unix.Read(w.fd, w.buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if !errors.Is(err, unix.EAGAIN) {
				w.markLost("read: " + err.Error())
			}
			return
		}
		if n <= 0 {
			return
		}
		w.parse(w.buf[:n])
	}
}

const metaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// parse handles a buffer of events.
func (w *watcher) parse(b []byte) {
	for len(b) >= metaLen {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		el := int(m.Event_len)
		if el < metaLen || el > len(b) {
			w.markLost("malformed event")
			return
		}
		w.events.Add(1)
		if m.Fd >= 0 {
			unix.Close(int(m.Fd))
		}
		w.event(m.Mask, b[m.Metadata_len:el])
		b = b[el:]
	}
}

// fid is one file identifier of an event.
type fid struct {
	typ    int32
	handle []byte
	name   string // DFID_NAME records only
}

// event handles one event's info records.
func (w *watcher) event(mask uint64, info []byte) {
	if mask&unix.FAN_Q_OVERFLOW != 0 {
		w.markLost("fanotify queue overflow")
		return
	}
	var dir, obj *fid
	for len(info) >= 4 {
		typ, l := info[0], int(binary.LittleEndian.Uint16(info[2:4]))
		if l < 4 || l > len(info) {
			w.markLost("malformed event record")
			return
		}
		rec := info[:l]
		info = info[l:]
		// hdr(4) fsid(8) handle_bytes(4) handle_type(4) f_handle[...] [name\0]
		if len(rec) < 20 {
			continue
		}
		hb := int(binary.LittleEndian.Uint32(rec[12:16]))
		if 20+hb > len(rec) {
			w.markLost("malformed file handle")
			return
		}
		f := &fid{typ: int32(binary.LittleEndian.Uint32(rec[16:20])), handle: rec[20 : 20+hb]}
		switch typ {
		case unix.FAN_EVENT_INFO_TYPE_DFID_NAME:
			name := rec[20+hb:]
			if i := indexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			f.name = string(name)
			dir = f
		case unix.FAN_EVENT_INFO_TYPE_DFID:
			f.name = "."
			dir = f
		case unix.FAN_EVENT_INFO_TYPE_FID:
			obj = f
		}
	}
	isDir := mask&unix.FAN_ONDIR != 0
	if isDir && mask&(unix.FAN_MOVED_FROM|unix.FAN_MOVED_TO|unix.FAN_DELETE) != 0 {
		// Cached directory paths may be stale now.
		clear(w.cache)
	}
	if dir != nil {
		rel, state := w.resolveDir(dir)
		switch state {
		case dirInside:
			if dir.name == "." || dir.name == "" {
				if rel != "" {
					w.mark(rel, false)
				}
			} else {
				w.mark(joinRel(rel, dir.name), isDir && mask&(unix.FAN_CREATE|unix.FAN_MOVED_TO) != 0)
				if mask&entryMask != 0 {
					w.feedEntry(joinRel(rel, dir.name), isDir)
				}
				// A directory's own mtime and ctime change with its entries.
				if rel != "" && mask&entryMask != 0 {
					w.mark(rel, false)
				}
			}
			return
		case dirUnknown:
			w.markLost("cannot resolve a directory handle")
			return
		}
		// Outside, or removed: only a hard link into the workspace matters.
	}
	if obj != nil && !isDir && len(w.inodes) > 0 {
		ino, ok := w.inodeOf(obj)
		if !ok {
			w.markLost("cannot resolve a file handle")
			return
		}
		for _, p := range w.inodes[ino] {
			w.mark(p, false)
		}
	}
}

func (w *watcher) mark(rel string, whole bool) {
	w.inside.Add(1)
	w.dirty[rel] = w.dirty[rel] || whole
	w.markRecent(rel, whole)
}

// markRecent records rel for the live guard while it follows recent paths
// and wakes it ("" whole: everything may have changed).
func (w *watcher) markRecent(rel string, whole bool) {
	if w.follow.Load() {
		w.recent[rel] = w.recent[rel] || whole
		select {
		case w.poke <- struct{}{}:
		default:
		}
	}
}

// followRecent turns the collection of recent paths on or off (off
// forgets them).
func (w *watcher) followRecent(on bool) {
	w.mu.Lock()
	w.follow.Store(on)
	if !on {
		clear(w.recent)
	}
	w.mu.Unlock()
}

// recentPaths returns the paths marked since the previous call (path →
// a directory created or moved there) and forgets them; it first reads
// what is queued.
func (w *watcher) recentPaths() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainLocked()
	out := w.recent
	w.recent = map[string]bool{}
	return out
}

// poked is signalled when a path is marked while recent paths are followed.
func (w *watcher) poked() <-chan struct{} { return w.poke }

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

const (
	dirInside = iota
	dirOutside
	dirGone // removed: its events changed nothing that still exists
	dirUnknown
)

// resolveDir finds the workspace-relative path of an event's directory.
func (w *watcher) resolveDir(f *fid) (string, int) {
	key := string(rune(f.typ)) + string(f.handle)
	if rel, ok := w.cache[key]; ok {
		if rel == outsideDir {
			return "", dirOutside
		}
		return rel, dirInside
	}
	w.resolves.Add(1)
	fd, err := unix.OpenByHandleAt(w.rootfd, unix.NewFileHandle(f.typ, f.handle), unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ESTALE) || errors.Is(err, unix.ENOENT) {
			return "", dirGone
		}
		return "", dirUnknown
	}
	defer unix.Close(fd)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", dirUnknown
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", dirUnknown
	}
	if st.Nlink == 0 {
		return "", dirGone // removed, still open somewhere
	}
	rel, state := "", dirOutside
	switch {
	case p == w.ws:
		state = dirInside
	case strings.HasPrefix(p, w.ws+"/"):
		rel, state = p[len(w.ws)+1:], dirInside
	}
	if len(w.cache) > 1<<16 {
		clear(w.cache)
	}
	if state == dirOutside {
		w.cache[key] = outsideDir
	} else {
		w.cache[key] = rel
	}
	return rel, state
}

// inodeOf returns the inode number a file handle names: read from the
// handle where its layout is the kernel's generic one (ext2/3/4, and
// others using FILEID_INO32_GEN), else by opening it.
func (w *watcher) inodeOf(f *fid) (uint64, bool) {
	const fileidIno32Gen, fileidIno32GenParent = 1, 2
	if (f.typ == fileidIno32Gen || f.typ == fileidIno32GenParent) && len(f.handle) >= 8 {
		return uint64(binary.LittleEndian.Uint32(f.handle[:4])), true
	}
	w.resolves.Add(1)
	fd, err := unix.OpenByHandleAt(w.rootfd, unix.NewFileHandle(f.typ, f.handle), unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ESTALE) || errors.Is(err, unix.ENOENT) {
			return 0, true // gone: no path of it is left to look at
		}
		return 0, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// mountsBeneath returns a mount point strictly beneath ws, if any.
func mountsBeneath(ws string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("snapshot: change capture: %w", err)
	}
	defer f.Close()
	table, err := mountinfo.Parse(f)
	if err != nil {
		return "", fmt.Errorf("snapshot: change capture: %w", err)
	}
	for _, m := range table {
		if strings.HasPrefix(m.Target, ws+"/") {
			return m.Target, nil
		}
	}
	return "", nil
}

// watcherStats are the watcher's counters.
func (w *watcher) counters() (events, inside, resolves int64) {
	return w.events.Load(), w.inside.Load(), w.resolves.Load()
}

// captureCheckMounts re-checks, before an incremental scan, that nothing
// was mounted beneath the workspace since the watch began.
func captureCheckMounts(ws string) string {
	m, err := mountsBeneath(ws)
	if err != nil {
		return err.Error()
	}
	if m != "" {
		return m + " is mounted inside the workspace"
	}
	return ""
}
