package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/atomicfile"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// Race-free bind sources.
//
// Docker resolves a bind source path on the host when the container
// starts, following symlinks. A path inside the workspace can be changed
// by a command running in another container between the moment agentbox
// checks it and that moment (swap .git with a decoy whose config is a
// symlink to a host socket, swap it back). So no bind source handed to
// Docker is a path an agent can change:
//
//  1. Every source is opened once, without following symlinks and
//     beneath the workspace (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV), and checked on the
//     descriptor: a directory or a regular file, never a socket, FIFO or
//     device. Its device and inode go into the expected mount table.
//  2. With the privilege to mount (agentbox as root, as with the private
//     engine), the descriptor is cloned into a detached mount (open_tree
//     OPEN_TREE_CLONE, not recursive: submounts stay out) and attached
//     (move_mount) at a fresh path in a root-only directory of the state
//     dir. Docker gets that pin path: nothing but agentbox can change it,
//     and it is exactly the inode that was checked. The pin is detached as
//     soon as the container has started (its own copy lives in the
//     container's mount namespace).
//  3. Whatever got mounted, init compares /proc/self/mountinfo and the
//     device/inode of every mount point with the expected table before it
//     says Ready, and refuses on any difference (sandbox/initproc). Without
//     the privilege to pin, the workspace path is given to Docker and this
//     check alone keeps a swapped source out: the container is refused.

// bindSource is one bind mount of a container, opened and checked.
type bindSource struct {
	target string // absolute path in the container
	fd     *os.File
	path   string // host path for Docker when not pinned
	ro     bool
	dir    bool
	dev    uint64
	ino    uint64
	// over identifies what a socket mask covers (the socket's device and
	// inode): a socket removed and made again at a masked path detaches
	// the mask in a waiting container, so the hand-over fingerprint must
	// tell the new socket from the old.
	over string
}

// pins is the set of pinned sources of one container start.
type pins struct {
	dir     string
	mounted []string
}

// release detaches every pin and removes the pin directory. It never
// removes recursively: a pin that failed to detach is still the
// workspace, and an rmdir or unlink of it fails instead of descending.
func (p *pins) release() {
	if p == nil {
		return
	}
	for _, m := range p.mounted {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	removePinDir(p.dir)
}

// removePinDir removes the (detached) pin mount points in dir, then dir.
func removePinDir(dir string) {
	if dir == "" {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	_ = os.Remove(dir)
}

// openBeneath opens rel (slash-separated, relative) beneath dirfd without
// following any symlink or crossing a mount, as an O_PATH descriptor.
func openBeneath(dirfd int, rel string) (*os.File, error) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openHost opens an absolute host path (not agent-controlled: the init
// binary, the host toolchain) as an O_PATH descriptor; the final
// component may be a symlink only if it was resolved by the caller.
func openHost(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// describe fills type, device and inode of b from its descriptor and
// refuses anything but a directory or a regular file.
func (b *bindSource) describe() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(b.fd.Fd()), &st); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		b.dir = true
	case unix.S_IFREG:
	default:
		return fmt.Errorf("%s is a %s, not a file or directory", b.target, fileType(st.Mode))
	}
	b.dev, b.ino = uint64(st.Dev), st.Ino
	return nil
}

func fileType(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "special file"
}

// expected is the mount table init must find.
func expected(srcs []bindSource) []initproc.ExpectedMount {
	out := make([]initproc.ExpectedMount, 0, len(srcs))
	for _, b := range srcs {
		out = append(out, initproc.ExpectedMount{Target: b.target, Dev: b.dev, Ino: b.ino, Dir: b.dir, RO: b.ro})
	}
	return out
}

// pinState remembers whether this process may pin (mount) at all.
var pinState struct {
	once sync.Once
	ok   atomic.Bool
}

// pin attaches every source at a fresh path under dir and sets the
// sources' Docker paths to those pins. When this process lacks the
// privilege to mount, it returns nil pins and leaves the paths as they
// are (init's check is then the only guard; see the file comment).
func pin(dir string, srcs []bindSource, log func(msg string, args ...any)) (*pins, error) {
	pinState.once.Do(func() { pinState.ok.Store(unix.Geteuid() == 0) })
	if !pinState.ok.Load() {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pins{dir: dir}
	for i := range srcs {
		b := &srcs[i]
		target := filepath.Join(dir, strconv.Itoa(i))
		if b.dir {
			if err := os.Mkdir(target, 0o700); err != nil {
				p.release()
				return nil, err
			}
		} else if err := os.WriteFile(target, nil, 0o600); err != nil {
			p.release()
			return nil, err
		}
		mfd, err := unix.OpenTree(int(b.fd.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		if err != nil {
			p.release()
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
				pinState.ok.Store(false)
				log("cannot pin bind sources; relying on init's mount check alone", "err", err)
				return nil, nil
			}
			return nil, fmt.Errorf("pinning %s: %w", b.target, err)
		}
		err = unix.MoveMount(mfd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(mfd)
		if err != nil {
			p.release()
			return nil, fmt.Errorf("pinning %s: %w", b.target, err)
		}
		p.mounted = append(p.mounted, target)
		b.path = target
	}
	return p, nil
}

// sweepPins detaches and removes pin directories left by executors that
// died between pinning and releasing (named <pid>-<pidstart>-<n>).
func sweepPins(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		f := strings.SplitN(e.Name(), "-", 3)
		if len(f) == 3 {
			if pid, err := strconv.Atoi(f[0]); err == nil && procStart(pid) == f[1] {
				continue
			}
		}
		dir := filepath.Join(base, e.Name())
		if subs, err := os.ReadDir(dir); err == nil {
			for _, s := range subs {
				_ = unix.Unmount(filepath.Join(dir, s.Name()), unix.MNT_DETACH)
			}
		}
		removePinDir(dir)
	}
}

// errUnsafe wraps a refusal about the workspace's state.
func errUnsafe(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sandbox.ErrUnsafeWorkspace}, args...)...)
}

// copyInit copies the init binary at src (inside the workspace, so an
// agent could rewrite or swap it) into dir, named by its content hash,
// and returns the copy's path. The copy is written atomically and is
// read-only.
func copyInit(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("%w: init binary: %w", sandbox.ErrUnavailable, err)
	}
	defer in.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := atomicfile.Create(dir, "agentbox-init")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), in); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "agentbox-"+hex.EncodeToString(h.Sum(nil))[:16])
	if err := tmp.Commit(dst, 0o555); err != nil {
		return "", err
	}
	return dst, nil
}
