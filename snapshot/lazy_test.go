package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// lazyStore opens a store whose flusher stops at its first flush until
// release is closed.
func lazyStore(t *testing.T, state, ws string) (s *Store, flushing <-chan struct{}, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	started := make(chan struct{}, 16)
	s, err := Open(context.Background(), state, ws, withHook(func(point string) {
		if point == "lazy-flush" {
			started <- struct{}{}
			<-release
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return s, started, release
}

// writeCall is a Write of content to rel through s: Begin, the write,
// Finish.
func writeCall(t *testing.T, s *Store, rel, content string) Entry {
	t.Helper()
	ctx := context.Background()
	c, err := s.Begin(ctx, CallInfo{Tool: "Write", Summary: rel}, File(rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Workspace(), rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestLazyCommitKeepsRecordUntilDurable: a file-scoped call returns
// before its entry is flushed; until the flush its pending record stays
// (what recovery completes the call from), the entry is readable at once,
// and the flush retires the record.
func TestLazyCommitKeepsRecordUntilDurable(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "f"), []byte("old"), 0o644))
	s, flushing, release := lazyStore(t, state, ws)
	e := writeCall(t, s, "f", "new")
	<-flushing
	if _, err := os.Stat(s.path("pending", e.ID+".json")); err != nil {
		t.Fatalf("the pending record went before the entry was durable: %v", err)
	}
	if got, err := s.readEntry(e.ID); err != nil || len(got.Changes) != 1 {
		t.Fatalf("the entry is not readable before the flush: %v %+v", err, got)
	}
	close(release)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path("pending", e.ID+".json")); !os.IsNotExist(err) {
		t.Fatalf("the flush did not retire the pending record: %v", err)
	}
}

// TestLazyCommitLockWaitsForFlush: nothing done under a later lock of the
// same store (a call, an undo) may become durable before an earlier
// lazily committed entry: the lock waits for the flush.
func TestLazyCommitLockWaitsForFlush(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "f"), []byte("old"), 0o644))
	s, flushing, release := lazyStore(t, state, ws)
	writeCall(t, s, "f", "new")
	<-flushing
	got := make(chan error, 1)
	go func() {
		c, err := s.Begin(context.Background(), CallInfo{Tool: "Write"}, File("g"))
		if err == nil {
			err = c.Abort(context.Background())
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a later Begin took the lock while an earlier entry was not durable (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestLazyCommitLostEntryRecovered: a power loss after a lazily committed
// call returned but before its flush can leave its entry missing or
// empty; the pending record survives (it was durable before the call
// ran), and recovery completes the call again: same ID, the same change,
// and its undo restores the old content.
func TestLazyCommitLostEntryRecovered(t *testing.T) {
	for _, loss := range []string{"empty", "missing"} {
		t.Run(loss, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(ws, "f"), []byte("old"), 0o644))
			s, flushing, release := lazyStore(t, state, ws)
			e := writeCall(t, s, "f", "new")
			<-flushing
			name := s.path("journal", e.ID+".json")
			if loss == "empty" {
				if err := os.Truncate(name, 0); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
			// Another process opens the store after the "reboot".
			s2, err := Open(context.Background(), state, ws)
			if err != nil {
				t.Fatal(err)
			}
			close(release)
			s.Close()
			got, err := s2.readEntry(e.ID)
			if err != nil {
				t.Fatalf("recovery did not complete the call again: %v", err)
			}
			if len(got.Changes) != 1 || got.Changes[0].Path != "f" || got.Changes[0].Op != e.Changes[0].Op {
				t.Fatalf("recovered entry %+v, want the change %+v", got.Changes, e.Changes)
			}
			if des, _ := os.ReadDir(s2.path("pending")); len(des) != 0 {
				t.Fatalf("pending records left: %v", des)
			}
			if _, err := s2.Undo(context.Background(), e.ID, false, CallInfo{}); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "old" {
				t.Fatalf("undo of the recovered entry left %q, want %q", b, "old")
			}
			s2.Close()
		})
	}
}
