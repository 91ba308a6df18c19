package docker

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func listen(t *testing.T, p string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
}

// The walk finds every socket, at any depth, and a socket made in a
// directory it remembers (trusted: read long after its last change) is
// found on the next walk; symlinks are not followed.
func TestSocketWalk(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	listen(t, filepath.Join(ws, "host.sock"))
	listen(t, filepath.Join(ws, "a", "b", "deep.sock"))
	listen(t, filepath.Join(outside, "out.sock"))
	os.MkdirAll(filepath.Join(ws, "c"), 0o755)
	os.WriteFile(filepath.Join(ws, "c", "file"), nil, 0o644)
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// A clock two seconds ahead: every directory read is trusted.
	sw := &socketWalk{now: func() time.Time { return time.Now().Add(2 * time.Second) }}
	got, err := sw.sockets(fd)
	if err != nil || !slices.Equal(got, []string{"a/b/deep.sock", "host.sock"}) {
		t.Fatalf("first walk: %v %v", got, err)
	}
	if !sw.dirs["c"].trusted {
		t.Fatal("the clock did not make the memo trusted")
	}
	listen(t, filepath.Join(ws, "c", "new.sock"))
	if err := unix.Link(filepath.Join(ws, "host.sock"), filepath.Join(ws, "a", "linked.sock")); err != nil {
		t.Fatal(err)
	}
	got, err = sw.sockets(fd)
	if err != nil || !slices.Equal(got, []string{"a/b/deep.sock", "a/linked.sock", "c/new.sock", "host.sock"}) {
		t.Fatalf("after new sockets: %v %v", got, err)
	}
	os.Remove(filepath.Join(ws, "a", "b", "deep.sock"))
	got, _ = sw.sockets(fd)
	if slices.Contains(got, "a/b/deep.sock") {
		t.Fatalf("a removed socket is still listed: %v", got)
	}
}
