package workspace

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestEntryChangesRace: the sandbox's entry feed vouches for nothing
// before the store is open, then (after one more call that subscribes)
// reports every socket bound before it is called, with no wait in
// between: the kernel queues the event inside bind(), and the feed
// drains the queue. Repeated to give a late report a chance to show.
func TestEntryChangesRace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the change capture's watcher needs root (CAP_SYS_ADMIN)")
	}
	cfg := testConfig(t)
	cfg.Snapshot.ChangeCapture = "auto"
	l := NewSnapshots(cfg, nil)
	defer l.Close()
	if _, ok := l.entryChanges(); ok {
		t.Fatal("vouched before the store was open")
	}
	if _, err := l.get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.entryChanges(); ok {
		t.Fatal("vouched for the time before it subscribed")
	}
	dir := filepath.Join(cfg.Workspace, "d")
	must(t, os.Mkdir(dir, 0o755))
	// The watcher marks the whole file system, so other processes' writes
	// (a parallel test run) can overflow its queue: then the feed rightly
	// says it cannot vouch (the sandbox walks instead). Such rounds prove
	// nothing either way; most rounds must be vouched for.
	vouched := 0
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("s%03d.sock", i)
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		paths, ok := l.entryChanges()
		ln.Close()
		if !ok {
			t.Logf("round %d: the feed lost events (queue overflow from other writers)", i)
			continue
		}
		vouched++
		if _, seen := paths["d/"+name]; !seen {
			t.Fatalf("round %d: a socket bound before the call is not reported: %v", i, paths)
		}
	}
	if vouched < 150 {
		t.Fatalf("the feed vouched for only %d of 300 rounds", vouched)
	}
	l.Close()
	if _, ok := l.entryChanges(); ok {
		t.Fatal("vouched after the store closed")
	}
}
