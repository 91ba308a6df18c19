package docker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/system"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// Unix sockets in the workspace.
//
// A container has no network but loopback, yet a unix socket is reached
// by its path: a host process listening on WS/host.sock would be reached
// through the bind-mounted workspace (the kernel checks only the socket
// file's mode, and a read-only mount does not stop a connect). So every
// socket file found in the workspace when a container is made is covered
// by a read-only bind mount of an empty, inert file (maskSources): a
// connect there finds a regular file and fails (ECONNREFUSED). The masks
// are part of the expected mount table that init verifies, and of the
// hand-over fingerprint, so a pooled container made before a socket
// appeared, or before a masked socket was removed and made again (which
// detaches the mask over it inside the waiting container), is discarded
// rather than used. The set is kept current from
// the workspace's entry changes when the caller wires a feed in
// (WithEntryChanges: tools/workspace gives the snapshot watcher's), and
// found by a walk at a hand-over whenever the feed cannot vouch
// (socketWalk). Sockets the sandboxed command makes itself are made after
// its container was created and keep working. What this does not cover (a socket a host process creates in
// the workspace while a command runs) is written down in
// docs/ipc-boundary.md; under gVisor host sockets are off altogether.

// maxSocketWalk bounds the entries the socket walk reads; beyond it the
// workspace is refused (fail closed: an unread corner may hold a socket).
const maxSocketWalk = 2_000_000

// socketWalk finds the unix sockets of a workspace. With an entry feed
// (WithEntryChanges) that vouches for what changed since its previous
// call, it keeps the set current from the changed paths alone: the cost
// follows the changes, not the tree. Otherwise it walks, remembering each
// directory it read: a directory whose inode and change time are those of
// the last read (and that was not changed within a second before that
// read: racy) is not read again, only its subdirectories are visited.
// Creating, linking or renaming a socket into a directory changes that
// directory's change time, which no unprivileged process can set, so a
// walk costs one open and stat per directory. Safe for concurrent use.
type socketWalk struct {
	mu   sync.Mutex
	dirs map[string]dirMemo
	now  func() time.Time

	// feed reports entry changes (sandbox.OpenOptions.EntryChanges); nil:
	// walk every time.
	feed func() (map[string]bool, bool)
	// set is the sockets as of the feed's previous call, valid when a
	// walk made after that call's predecessor built it.
	set   map[string]bool
	valid bool
	// walks and updates count full walks and feed updates (tests, bench).
	walks, updates int
}

type dirMemo struct {
	ino     uint64
	ctime   unix.Timespec
	trusted bool     // not changed within a second before it was read
	socks   []string // names of the sockets in it
	subdirs []string // names of its subdirectories
}

// sockets lists the workspace-relative paths of every unix socket beneath
// the directory ws (an O_PATH descriptor), sorted. It never follows a
// symlink and never leaves the workspace's file system.
//
// The feed is asked first: every socket made before this call is either
// among the paths it returns or, when it cannot vouch (ok false), found
// by the walk that follows, which starts after the feed was drained.
func (sw *socketWalk) sockets(ws int) ([]string, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.now == nil {
		sw.now = time.Now
	}
	if sw.feed != nil {
		paths, ok := sw.feed()
		if ok && sw.valid {
			if err := sw.update(ws, paths); err == nil {
				sw.updates++
				return sortedKeys(sw.set), nil
			}
			// Unreadable: walk, which reports the error if it persists.
		}
		sw.valid = false
	}
	out, err := sw.walkAll(ws)
	if err != nil {
		return nil, fmt.Errorf("looking for unix sockets in the workspace: %w", err)
	}
	if sw.feed != nil {
		sw.set = make(map[string]bool, len(out))
		for _, p := range out {
			sw.set[p] = true
		}
		sw.valid = true
	}
	return out, nil
}

// walkAll walks the whole workspace with the directory memo.
func (sw *socketWalk) walkAll(ws int) ([]string, error) {
	w := &treeWalk{old: sw.dirs, next: map[string]dirMemo{}, now: sw.now}
	if err := w.walk(ws, ""); err != nil {
		return nil, err
	}
	sw.dirs = w.next
	sw.walks++
	sort.Strings(w.out)
	return w.out, nil
}

// update applies the entry changes paths to the socket set: each path is
// looked at again (a socket, or gone); a directory created, removed or
// moved there takes everything the set had beneath it away and, if one is
// there now, a walk of it puts back what it holds.
func (sw *socketWalk) update(ws int, paths map[string]bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(ws, &st); err != nil {
		return err
	}
	keys := sortedKeys(paths)
	walked := "" // the last directory walked whole: its descendants are done
	for _, rel := range keys {
		if walked != "" && strings.HasPrefix(rel, walked+"/") {
			continue
		}
		delete(sw.set, rel)
		f, err := openBeneath(ws, rel)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			sw.dropBeneath(rel) // gone, or no longer a directory inside
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		var fst unix.Stat_t
		err = unix.Fstat(int(f.Fd()), &fst)
		if err == nil && fst.Dev != st.Dev {
			f.Close()
			sw.dropBeneath(rel) // another mount: not part of the workspace's bind mount
			continue
		}
		switch {
		case err != nil:
		case fst.Mode&unix.S_IFMT == unix.S_IFSOCK:
			sw.set[rel] = true
			sw.dropBeneath(rel)
		case fst.Mode&unix.S_IFMT != unix.S_IFDIR:
			sw.dropBeneath(rel)
		case paths[rel]:
			// A directory arrived (or left and another came): what it
			// holds now replaces what the set had beneath it.
			sw.dropBeneath(rel)
			w := &treeWalk{dev: st.Dev, now: sw.now}
			if err = w.walk(int(f.Fd()), rel); err == nil {
				for _, p := range w.out {
					sw.set[p] = true
				}
				walked = rel
			}
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	return nil
}

func (sw *socketWalk) dropBeneath(rel string) {
	for p := range sw.set {
		if strings.HasPrefix(p, rel+"/") {
			delete(sw.set, p)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// treeWalk is one walk of a directory tree for sockets. With next set it
// remembers every directory it read and skips reading one that old has
// (same inode and change time, trusted); without, it reads them all.
type treeWalk struct {
	old, next map[string]dirMemo
	now       func() time.Time
	dev       uint64 // of the workspace; 0: take the first directory's
	seen      int
	out       []string
}

func (w *treeWalk) walk(dirfd int, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return err
	}
	if w.dev == 0 {
		w.dev = st.Dev
	} else if st.Dev != w.dev {
		return nil // another mount: not part of the workspace's bind mount
	}
	m, ok := w.old[rel]
	if w.next == nil || !ok || !m.trusted || m.ino != st.Ino || m.ctime != st.Ctim {
		began := w.now()
		var err error
		if m, err = readDirTypes(dirfd, &w.seen); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		m.ino, m.ctime = st.Ino, st.Ctim
		m.trusted = time.Unix(st.Ctim.Unix()).Before(began.Add(-time.Second))
	}
	if w.next != nil {
		w.next[rel] = m
	}
	for _, n := range m.socks {
		w.out = append(w.out, joinRel(rel, n))
	}
	for _, n := range m.subdirs {
		sub, err := openBeneath(dirfd, n)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			continue // gone or replaced since it was read (then this directory's ctime changed too)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", joinRel(rel, n), err)
		}
		err = w.walk(int(sub.Fd()), joinRel(rel, n))
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// readDirTypes reads the directory dirfd (O_PATH) refers to: the names of
// its sockets and subdirectories, from the types the directory itself
// records (no stat per entry). seen counts entries against maxSocketWalk.
func readDirTypes(dirfd int, seen *int) (dirMemo, error) {
	var m dirMemo
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return m, err
	}
	d := os.NewFile(uintptr(fd), ".")
	defer d.Close()
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			if *seen++; *seen > maxSocketWalk {
				return m, fmt.Errorf("more than %d entries", maxSocketWalk)
			}
			switch e.Type() & os.ModeType {
			case os.ModeSocket:
				m.socks = append(m.socks, e.Name())
			case os.ModeDir:
				m.subdirs = append(m.subdirs, e.Name())
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return m, nil
		}
		if err != nil {
			return m, err
		}
	}
}

// maskSources opens the inert file once for every socket in the
// workspace, as read-only bind sources over them.
func (r *Runner) maskSources(ws int) ([]bindSource, error) {
	socks, err := r.sockets.sockets(ws)
	if err != nil {
		return nil, errUnsafe("%v", err)
	}
	out := make([]bindSource, 0, len(socks))
	for _, rel := range socks {
		f, err := openHost(r.inert)
		if err != nil {
			closeSources(out)
			return nil, fmt.Errorf("%w: socket mask: %w", sandbox.ErrUnavailable, err)
		}
		target := filepath.Join(r.workspace, filepath.FromSlash(rel))
		b := bindSource{target: target, fd: f, path: r.inert, ro: true, over: socketID(ws, rel)}
		if err := b.describe(); err != nil {
			f.Close()
			closeSources(out)
			return nil, fmt.Errorf("%w: socket mask: %w", sandbox.ErrUnavailable, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// socketID identifies the socket at rel beneath ws for the hand-over
// fingerprint: its device, inode and change time (an inode number freed
// by the old socket may be reused by the new one; its change time is the
// new one's making), or ":gone" when it cannot be opened now.
func socketID(ws int, rel string) string {
	f, err := openBeneath(ws, rel)
	if err != nil {
		return ":gone"
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ":gone"
	}
	return fmt.Sprintf(":%d:%d:%d.%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}

// inertName is the empty read-only file mounted over workspace sockets,
// kept in the runner's state directory.
const inertName = "socket-mask"

// inertFile returns the path of the inert file under dir, creating it
// (empty, mode 0444) when missing, and refusing anything else there.
func inertFile(dir string) (string, error) {
	p := filepath.Join(dir, inertName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o444)
	if err != nil {
		return "", fmt.Errorf("socket mask: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() != 0 {
		return "", fmt.Errorf("socket mask %s is not an empty regular file", p)
	}
	return p, nil
}

// gvisorRuntime picks the gVisor runtime of the runner's containers and
// whether they can connect to host unix sockets. gVisor cannot start with a
// file mounted over a socket, so workspace sockets are never masked there:
// the runtime must keep host sockets closed. An executor relaying to the
// egress proxy needs them open and uses the runtime's egress variant
// (runsc-egress) when the engine offers it; then, and whenever the runtime's
// own arguments open them, hostUDS is set and a workspace socket refuses
// the call (gvisorSockets).
func (r *Runner) gvisorRuntime(runtimes map[string]system.RuntimeWithStatus) {
	if !r.gvisor {
		return
	}
	if r.egress != nil {
		if v := engine.EgressRuntime(r.runtime); runtimes[v].Path != "" {
			r.runtime = v
		}
	}
	r.hostUDS = engine.HostUDSOpen(runtimes[r.runtime].Args)
}

// gvisorSockets refuses a container under gVisor with host sockets open
// while the workspace holds a unix socket: it cannot be masked there and
// the command could connect to it.
func (r *Runner) gvisorSockets(ws int) error {
	if !r.hostUDS {
		return nil
	}
	socks, err := r.sockets.sockets(ws)
	if err != nil {
		return errUnsafe("%v", err)
	}
	if len(socks) > 0 {
		return errUnsafe("the workspace holds a unix socket (%s); under gVisor with host sockets open for the egress proxy it cannot be masked, so the command could connect to it: remove the socket, or use runc or network mode none", socks[0])
	}
	return nil
}
