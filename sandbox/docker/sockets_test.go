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
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
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
	must(t, os.MkdirAll(filepath.Join(ws, "c"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "c", "file"), nil, 0o644))
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
	must(t, os.Remove(filepath.Join(ws, "a", "b", "deep.sock")))
	got, _ = sw.sockets(fd)
	if slices.Contains(got, "a/b/deep.sock") {
		t.Fatalf("a removed socket is still listed: %v", got)
	}
}

// fakeFeed stands in for the snapshot watcher's entry changes: the test
// reports what it changed, or that the feed lost events.
type fakeFeed struct {
	paths map[string]bool
	lost  bool
}

func (f *fakeFeed) take() (map[string]bool, bool) {
	p, ok := f.paths, !f.lost
	f.paths, f.lost = map[string]bool{}, false
	return p, ok
}

// With an entry feed the socket set follows the reported paths without a
// walk: sockets made and removed, a directory of sockets moved in and out,
// a directory replaced by a symlink to one outside. When the feed cannot
// vouch (overflow), a walk finds even what it never reported.
func TestSocketWalkFeed(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	listen(t, filepath.Join(ws, "a", "old.sock"))
	listen(t, filepath.Join(outside, "tree", "sub", "s.sock"))
	listen(t, filepath.Join(outside, "evil", "x.sock"))
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	feed := &fakeFeed{lost: true} // not subscribed yet
	sw := &socketWalk{feed: feed.take}
	step := func(name string, walks int, want ...string) {
		t.Helper()
		got, err := sw.sockets(fd)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s: sockets %v, want %v", name, got, want)
		}
		if sw.walks != walks {
			t.Fatalf("%s: %d walks, want %d", name, sw.walks, walks)
		}
	}
	step("first", 1, "a/old.sock")

	listen(t, filepath.Join(ws, "a", "new.sock"))
	feed.paths["a/new.sock"] = false
	step("socket made", 1, "a/new.sock", "a/old.sock")

	if err := os.Rename(filepath.Join(outside, "tree"), filepath.Join(ws, "in")); err != nil {
		t.Fatal(err)
	}
	feed.paths["in"] = true
	step("directory moved in", 1, "a/new.sock", "a/old.sock", "in/sub/s.sock")

	must(t, os.Remove(filepath.Join(ws, "a", "new.sock")))
	feed.paths["a/new.sock"] = false
	if err := os.Rename(filepath.Join(ws, "in"), filepath.Join(outside, "tree")); err != nil {
		t.Fatal(err)
	}
	feed.paths["in"] = true
	step("socket removed, directory moved out", 1, "a/old.sock")

	must(t, os.RemoveAll(filepath.Join(ws, "a")))
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(ws, "a")); err != nil {
		t.Fatal(err)
	}
	feed.paths["a"] = true
	step("directory replaced by a symlink", 1)

	// Lost events: a socket the feed never reported is found by the walk.
	must(t, os.Remove(filepath.Join(ws, "a")))
	listen(t, filepath.Join(ws, "b", "c", "unreported.sock"))
	feed.lost = true
	step("overflow", 2, "b/c/unreported.sock")
	if sw.updates != 4 {
		t.Fatalf("%d updates from the feed, want 4", sw.updates)
	}
}

// A socket removed and made again at a masked path (a host server
// restarting) detaches the mask in a container waiting in the pool: the
// hand-over fingerprint changes, so that container is not used.
func TestMaskFingerprintFollowsSocket(t *testing.T) {
	ws := t.TempDir()
	r := testRunner(t, ws)
	inert, err := inertFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.inert = inert
	sock := filepath.Join(ws, "app.sock")
	listen(t, sock)
	before, err := r.fingerprint(false)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.fingerprint(false); err != nil || again != before {
		t.Fatalf("fingerprint changed with nothing changed: %q, then %q (%v)", before, again, err)
	}
	must(t, os.Remove(sock))
	listen(t, sock)
	after, err := r.fingerprint(false)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("a socket made again at a masked path left the fingerprint as it was: %q", after)
	}
}
