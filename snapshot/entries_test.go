package snapshot

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func listenUnix(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
}

// TestEntryChanges: a socket bound, a directory moved in from outside the
// workspace and one removed are each in the very next Take (no wait: the
// event is queued inside the system call), with their kind; content
// changes are not; the next Take starts empty.
func TestEntryChanges(t *testing.T) {
	st, ws, _ := newWatchedStore(t)
	must(t, os.MkdirAll(filepath.Join(ws, "gone"), 0o755))
	outside := filepath.Join(filepath.Dir(ws), "outside-"+filepath.Base(ws))
	must(t, os.MkdirAll(filepath.Join(outside, "sub"), 0o755))
	t.Cleanup(func() { os.RemoveAll(outside) })
	must(t, os.WriteFile(filepath.Join(ws, "file"), []byte("a"), 0o644))
	ec, err := st.EntryChanges()
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	if _, lost := ec.Take(); lost != "" {
		t.Fatalf("lost: %s", lost)
	}
	must(t, os.WriteFile(filepath.Join(ws, "file"), []byte("b"), 0o644)) // content: not an entry change
	listenUnix(t, filepath.Join(ws, "gone", "x.sock"))
	if err := os.Rename(outside, filepath.Join(ws, "in")); err != nil {
		t.Fatal(err)
	}
	got, lost := ec.Take()
	want := map[string]bool{"gone/x.sock": false, "in": true}
	if lost != "" || !maps.Equal(got, want) {
		t.Fatalf("Take = %v, %q; want %v", got, lost, want)
	}
	must(t, os.Remove(filepath.Join(ws, "gone", "x.sock")))
	must(t, os.Remove(filepath.Join(ws, "gone")))
	got, lost = ec.Take()
	// The socket's own removal is reported only if it was read before
	// its directory went (the directory's handle resolves no more); the
	// directory's removal covers it either way.
	delete(got, "gone/x.sock")
	want = map[string]bool{"gone": true}
	if lost != "" || !maps.Equal(got, want) {
		t.Fatalf("after removals: Take = %v, %q; want %v", got, lost, want)
	}
	if got, _ := ec.Take(); len(got) != 0 {
		t.Fatalf("a second Take repeats %v", got)
	}

	// A socket hard-linked in from outside, and a directory holding one
	// exchanged with a file (RENAME_EXCHANGE): both names of the exchange.
	listenUnix(t, filepath.Join(outside+"-2.sock"))
	t.Cleanup(func() { os.Remove(outside + "-2.sock") })
	if err := os.Link(outside+"-2.sock", filepath.Join(ws, "linked.sock")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "in"), unix.AT_FDCWD, filepath.Join(ws, "file"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	got, lost = ec.Take()
	want = map[string]bool{"linked.sock": false, "in": true, "file": true}
	if lost != "" || !maps.Equal(got, want) {
		t.Fatalf("link, exchange: Take = %v, %q; want %v", got, lost, want)
	}
}

// TestEntryChangesOverflow: when the queue overflows (the reader held off
// while 20000 files are made), Take says lost, once; a closed store says
// so too.
func TestEntryChangesOverflow(t *testing.T) {
	st, ws, _ := newWatchedStore(t)
	ec, err := st.EntryChanges()
	if err != nil {
		t.Fatal(err)
	}
	st.cap.w.mu.Lock() // the goroutine cannot drain meanwhile
	for i := 0; i < 20000; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			st.cap.w.mu.Unlock()
			t.Fatal(err)
		}
	}
	st.cap.w.mu.Unlock()
	if _, lost := ec.Take(); lost != "fanotify queue overflow" {
		t.Fatalf("lost = %q, want the overflow", lost)
	}
	if _, lost := ec.Take(); lost != "" {
		t.Fatalf("lost again: %q", lost)
	}
	st.Close()
	if _, lost := ec.Take(); lost == "" {
		t.Fatal("a closed store's feed still vouches")
	}
	if _, err := st.EntryChanges(); err == nil {
		t.Fatal("subscribed to a closed store")
	}
}
