package docker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox"
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
// appeared is discarded rather than used. Sockets the sandboxed command
// makes itself are made after its container was created and keep
// working. What this does not cover (a socket a host process creates in
// the workspace while a command runs) is written down in
// docs/ipc-boundary.md; under gVisor host sockets are off altogether.

// maxSocketWalk bounds the entries the socket walk reads; beyond it the
// workspace is refused (fail closed: an unread corner may hold a socket).
const maxSocketWalk = 2_000_000

// socketWalk finds the unix sockets of a workspace, remembering each
// directory it read: a directory whose inode and change time are those of
// the last read (and that was not changed within a second before that
// read: racy) is not read again, only its subdirectories are visited.
// Creating, linking or renaming a socket into a directory changes that
// directory's change time, which no unprivileged process can set, so a
// walk at every hand-over costs one open and stat per directory. Safe for
// concurrent use.
type socketWalk struct {
	mu   sync.Mutex
	dirs map[string]dirMemo
	now  func() time.Time
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
func (sw *socketWalk) sockets(ws int) ([]string, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.now == nil {
		sw.now = time.Now
	}
	next := map[string]dirMemo{}
	var out []string
	seen := 0
	var dev uint64
	var walk func(dirfd int, rel string) error
	walk = func(dirfd int, rel string) error {
		var st unix.Stat_t
		if err := unix.Fstat(dirfd, &st); err != nil {
			return err
		}
		if rel == "" {
			dev = st.Dev
		} else if st.Dev != dev {
			return nil // another mount: not part of the workspace's bind mount
		}
		m, ok := sw.dirs[rel]
		if !ok || !m.trusted || m.ino != st.Ino || m.ctime != st.Ctim {
			began := sw.now()
			var err error
			if m, err = readDirTypes(dirfd, &seen); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			m.ino, m.ctime = st.Ino, st.Ctim
			m.trusted = time.Unix(st.Ctim.Unix()).Before(began.Add(-time.Second))
		}
		next[rel] = m
		for _, n := range m.socks {
			out = append(out, joinRel(rel, n))
		}
		for _, n := range m.subdirs {
			sub, err := openBeneath(dirfd, n)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				continue // gone or replaced since it was read (then this directory's ctime changed too)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", joinRel(rel, n), err)
			}
			err = walk(int(sub.Fd()), joinRel(rel, n))
			sub.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(ws, ""); err != nil {
		return nil, fmt.Errorf("looking for unix sockets in the workspace: %w", err)
	}
	sw.dirs = next
	sort.Strings(out)
	return out, nil
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
			return nil, fmt.Errorf("%w: socket mask: %v", sandbox.ErrUnavailable, err)
		}
		target := filepath.Join(r.workspace, filepath.FromSlash(rel))
		b := bindSource{target: target, fd: f, path: r.inert, ro: true}
		if err := b.describe(); err != nil {
			f.Close()
			closeSources(out)
			return nil, fmt.Errorf("%w: socket mask: %v", sandbox.ErrUnavailable, err)
		}
		out = append(out, b)
	}
	return out, nil
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
