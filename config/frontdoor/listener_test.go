package frontdoor

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// shortDir is a temporary directory with a path short enough for a socket.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serveEcho accepts connections on l and answers each with the peer uid.
func serveEcho(l *Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		p, _ := PeerOf(c)
		io.WriteString(c, "peer "+uid(p.UID)+"\n")
		c.Close()
	}
}

func dialRead(t *testing.T, path string) (string, error) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestListenUnixAcceptsItsOwner(t *testing.T) {
	path := filepath.Join(shortDir(t), "run", "mcp.sock")
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := statMode(t, filepath.Dir(path)); m != 0o700 {
		t.Errorf("socket directory mode %#o, want 0700", m)
	}
	if m := statMode(t, path); m != 0o600 {
		t.Errorf("socket mode %#o, want 0600", m)
	}
	go serveEcho(l)
	got, err := dialRead(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "peer " + uid(uint32(os.Geteuid())) + "\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestListenUnixRefusesOtherPeers: a peer whose SO_PEERCRED uid is not
// allowed is closed without a byte, and the refusal is logged.
func TestListenUnixRefusesOtherPeers(t *testing.T) {
	path := filepath.Join(shortDir(t), "mcp.sock")
	logs := &syncBuffer{}
	l, err := ListenUnix(path, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Pretend this process is uid 4242 and root is not ours: the test's own
	// connection is then "another user".
	l.allow = []uint32{4242}
	go serveEcho(l)
	got, err := dialRead(t, path)
	if got != "" {
		t.Errorf("a refused peer read %q (err %v)", got, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "refused a connection from another user") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "uid="+uid(uint32(os.Geteuid()))) {
		t.Errorf("the refusal does not name the uid:\n%s", logs.String())
	}
	// AllowUID lets that uid in.
	l.allow = append(l.allow, uint32(os.Geteuid()))
	if got, err := dialRead(t, path); err != nil || !strings.HasPrefix(got, "peer ") {
		t.Errorf("allowed peer: %q, %v", got, err)
	}
}

func TestListenUnixRefusesUnsafePlaces(t *testing.T) {
	t.Run("directory open to others", func(t *testing.T) {
		dir := filepath.Join(shortDir(t), "open")
		must(t, os.Mkdir(dir, 0o755))
		must(t, os.Chmod(dir, 0o755))
		_, err := ListenUnix(filepath.Join(dir, "s.sock"))
		if !errors.Is(err, ErrInsecure) {
			t.Errorf("err = %v, want ErrInsecure", err)
		}
		// The advice fits a directory holding no token: close it.
		if err == nil || !strings.Contains(err.Error(), "chmod 700 "+dir) || strings.Contains(err.Error(), "token") {
			t.Errorf("err = %v, want the advice to close the directory", err)
		}
	})
	t.Run("directory is a symlink", func(t *testing.T) {
		base := shortDir(t)
		must(t, os.Mkdir(filepath.Join(base, "real"), 0o700))
		must(t, os.Symlink("real", filepath.Join(base, "link")))
		if _, err := ListenUnix(filepath.Join(base, "link", "s.sock")); !errors.Is(err, ErrInsecure) {
			t.Errorf("err = %v, want ErrInsecure", err)
		}
	})
	t.Run("relative path", func(t *testing.T) {
		if _, err := ListenUnix("run/s.sock"); err == nil {
			t.Error("a relative socket path was accepted")
		}
	})
	t.Run("a regular file is in the way", func(t *testing.T) {
		p := filepath.Join(shortDir(t), "s.sock")
		must(t, os.WriteFile(p, []byte("keep me"), 0o600))
		if _, err := ListenUnix(p); err == nil {
			t.Error("ListenUnix replaced a regular file")
		}
		if b, _ := os.ReadFile(p); string(b) != "keep me" {
			t.Error("the file was changed")
		}
	})
	t.Run("a live server is in the way", func(t *testing.T) {
		p := filepath.Join(shortDir(t), "s.sock")
		l, err := ListenUnix(p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go serveEcho(l)
		if _, err := ListenUnix(p); !errors.Is(err, ErrInUse) {
			t.Errorf("err = %v, want ErrInUse", err)
		}
	})
	t.Run("a stale socket is replaced", func(t *testing.T) {
		p := filepath.Join(shortDir(t), "s.sock")
		ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ul.SetUnlinkOnClose(false)
		ul.Close()
		l, err := ListenUnix(p)
		if err != nil {
			t.Fatalf("stale socket: %v", err)
		}
		l.Close()
	})
}

func uid(u uint32) string { return strconv.FormatUint(uint64(u), 10) }

// TestAllowUIDOpensTheDirectory: peers of another allowed uid must reach
// the socket, so the directory becomes searchable and the socket
// connectable by everyone; the peer check still admits only the list.
func TestAllowUIDOpensTheDirectory(t *testing.T) {
	path := filepath.Join(shortDir(t), "run", "egress.sock")
	l, err := ListenUnix(path, AllowUID(4242))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := statMode(t, filepath.Dir(path)); m != 0o711 {
		t.Errorf("directory mode %#o, want 0711", m)
	}
	if m := statMode(t, path); m != 0o666 {
		t.Errorf("socket mode %#o, want 0666", m)
	}
	want := []uint32{uint32(os.Geteuid()), 0, 4242}
	if !slices.Equal(l.allow, want) {
		t.Errorf("allowed uids %v, want %v", l.allow, want)
	}
	// A directory open to listing or writing is still refused.
	must(t, os.Chmod(filepath.Dir(path), 0o755))
	if _, err := ListenUnix(filepath.Join(filepath.Dir(path), "other.sock"), AllowUID(4242)); !errors.Is(err, ErrInsecure) {
		t.Errorf("0755 directory with AllowUID: %v", err)
	}
}
