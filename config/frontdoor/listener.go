package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// maxSocketPath is the longest path a unix socket address holds.
const maxSocketPath = 107

// ErrInUse: another server already listens on the socket path.
var ErrInUse = errors.New("socket already in use")

// Peer is the process at the other end of a unix socket, as the kernel
// recorded it when that process connected (SO_PEERCRED).
type Peer struct {
	PID      int32
	UID, GID uint32
}

// AllowUID lets peers of these uids in as well (e.g. the uid a sandboxed
// executor runs as, for the egress proxy). This process's uid and root
// are always allowed. So that those peers can reach the socket at all,
// its directory becomes 0711 (searchable, not listable) and the socket
// 0666: the kernel then lets every local user connect, and the
// SO_PEERCRED check alone turns away the uids not allowed.
func AllowUID(uids ...uint32) Option {
	return func(o *options) { o.uids = append(o.uids, uids...) }
}

// Listener is a unix-socket listener whose Accept returns only
// connections from allowed peers: this process's uid, root, and the uids
// given with AllowUID. The socket sits in a directory only this uid can
// enter (0700), so the kernel refuses other users before they connect;
// the SO_PEERCRED check holds even if that directory is opened later.
// Refused connections are closed and logged, and Accept waits for the
// next one. Safe for concurrent use.
type Listener struct {
	ul    *net.UnixListener
	path  string
	allow []uint32
	o     options
}

// Conn is an accepted connection and the peer the kernel named.
type Conn struct {
	*net.UnixConn
	Peer Peer
}

// ListenUnix listens on the unix socket path, which must be absolute. Its
// directory is created 0700 when missing and must otherwise be a real
// directory of this uid with no group or other permissions (ErrInsecure;
// with AllowUID it is made 0711). A stale socket left by a dead server is
// replaced; a live one is ErrInUse; any other file there is an error. The
// socket itself is 0600 (0666 with AllowUID).
func ListenUnix(path string, opts ...Option) (*Listener, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("frontdoor: socket path %q is not absolute", path)
	}
	path = filepath.Clean(path)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("frontdoor: socket path %s is %d bytes, longer than a unix socket address holds (%d)", path, len(path), maxSocketPath)
	}
	o := newOptions(opts)
	dir := filepath.Dir(path)
	var forbidden uint32 = 0o077
	dirMode, sockMode := os.FileMode(0o700), os.FileMode(0o600)
	if len(o.uids) > 0 {
		forbidden, dirMode, sockMode = 0o066, 0o711, 0o666
	}
	if err := checkDirMode(dir, true, forbidden); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	if err := os.Chmod(path, sockMode); err != nil {
		ul.Close()
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	allow := append([]uint32{uint32(os.Geteuid()), 0}, o.uids...)
	return &Listener{ul: ul, path: path, allow: allow, o: o}, nil
}

// clearStale removes a socket nobody answers on at path.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("frontdoor: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("frontdoor: %s exists and is not a socket; not replacing it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("frontdoor: %s: %w (another server answers there)", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("frontdoor: removing stale socket: %w", err)
	}
	return nil
}

// Accept waits for the next connection from an allowed peer. The
// returned net.Conn is a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.ul.AcceptUnix()
		if err != nil {
			return nil, err
		}
		p, err := PeerCred(c)
		if err != nil {
			l.o.log.Warn("refused a connection: no peer credentials", "socket", l.path, "err", err)
			c.Close()
			continue
		}
		if !slices.Contains(l.allow, p.UID) {
			l.o.log.Warn("refused a connection from another user", "socket", l.path, "uid", p.UID, "pid", p.PID)
			c.Close()
			continue
		}
		return &Conn{UnixConn: c, Peer: p}, nil
	}
}

// Close stops listening and removes the socket.
func (l *Listener) Close() error { return l.ul.Close() }

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr { return l.ul.Addr() }

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// PeerCred asks the kernel who is on the other end of c (SO_PEERCRED):
// the credentials the peer had when it connected, which it cannot forge.
// Doors that manage their own socket (the egress proxy) check callers
// with it, as Listener does.
func PeerCred(c *net.UnixConn) (Peer, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, serr
	}
	return Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}, nil
}

// PeerOf returns the peer of a connection accepted by a Listener.
func PeerOf(c net.Conn) (Peer, bool) {
	pc, ok := c.(*Conn)
	if !ok {
		return Peer{}, false
	}
	return pc.Peer, true
}

type peerKey struct{}

// ConnContext is an http.Server ConnContext that makes the peer of a
// Listener's connection available to handlers through PeerFromContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if p, ok := PeerOf(c); ok {
		return context.WithValue(ctx, peerKey{}, p)
	}
	return ctx
}

// PeerFromContext returns the peer ConnContext recorded.
func PeerFromContext(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}
