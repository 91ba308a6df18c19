package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestStagedBegin: a Staged single-file call's Begin returns while its
// pending record is still on its way to the disk; Durable, Finish and
// Abort wait for it. A call that would create a parent directory is not
// Staged: Begin waits, as for any other call.
func TestStagedBegin(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, "dir"), 0o755))
	release := make(chan struct{})
	var syncs atomic.Int32
	s, err := Open(context.Background(), state, ws, withHook(func(point string) {
		if point == "staged-sync" {
			syncs.Add(1)
			<-release
		}
	}))
	must(t, err)
	ctx := context.Background()
	staged := File("dir/a")
	staged.Staged = true

	c, err := s.Begin(ctx, CallInfo{Tool: "Write"}, staged)
	must(t, err)
	if !c.Staged() {
		t.Fatal("a file whose parent exists was not Staged")
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.Durable(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Durable = %v before the record's fsync ended", err)
	}
	finished := make(chan error, 1)
	go func() {
		must(t, os.WriteFile(filepath.Join(ws, "dir", "a"), []byte("a\n"), 0o644))
		_, err := c.Finish(ctx)
		finished <- err
	}()
	select {
	case err := <-finished:
		t.Fatalf("Finish returned (%v) before the record's fsync ended", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := s.readPending(c.ID()); err != nil {
		t.Fatalf("the pending record is not there while the call runs: %v", err)
	}
	close(release)
	must(t, c.Durable(ctx))
	must(t, <-finished)
	list, err := s.List(ctx, 0)
	must(t, err)
	if len(list) != 1 || len(list[0].Changes) != 1 || list[0].Changes[0].Path != "dir/a" {
		t.Fatalf("journal %+v", list)
	}

	// A missing parent: not Staged, durable when Begin returns.
	n := syncs.Load()
	deep := File("new/dir/b")
	deep.Staged = true
	c, err = s.Begin(ctx, CallInfo{Tool: "Write"}, deep)
	must(t, err)
	if c.Staged() || syncs.Load() != n {
		t.Fatal("a call that creates a directory was Staged")
	}
	must(t, c.Durable(ctx))
	must(t, c.Abort(ctx))

	// Not asked for: not Staged.
	c, err = s.Begin(ctx, CallInfo{Tool: "Write"}, File("dir/c"))
	must(t, err)
	if c.Staged() {
		t.Fatal("a call was Staged without asking")
	}
	must(t, c.Abort(ctx))
	must(t, s.Close())
}

// TestStagedDurableDoneCtx: once the record is on the disk, Durable says
// so even with a done context (it must not pick at random between the
// two: a caller would withdraw a change that could go ahead, or call a
// made change not made).
func TestStagedDurableDoneCtx(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	s, err := Open(context.Background(), state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := File("a")
	sc.Staged = true
	c, err := s.Begin(context.Background(), CallInfo{Tool: "Write"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort(context.Background())
	if err := c.Durable(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 {
		if err := c.Durable(ctx); err != nil {
			t.Fatalf("try %d: Durable = %v with the record durable", i, err)
		}
	}
}

// TestUpdateSpare: a file-scoped call builds its manifest in the copy of
// the previous one's map made in the background (not a copy made while
// it waits), never in a map another manifest holds; the result is the
// manifest a full scan finds.
func TestUpdateSpare(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(ws, "f"+strconv.Itoa(i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(context.Background(), state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Checkpoint(ctx, "base", CallInfo{}); err != nil {
		t.Fatal(err)
	}
	mapOf := func(ix *index) unsafe.Pointer { return reflect.ValueOf(ix.entries).UnsafePointer() }
	for i := range 5 {
		writeCall(t, s, "f"+strconv.Itoa(i), "call "+strconv.Itoa(i))
		prev, err := s.loadIndex()
		if err != nil {
			t.Fatal(err)
		}
		sp := s.updSpare
		if sp == nil || sp.src != prev {
			t.Fatalf("call %d: no copy of the saved manifest under way", i)
		}
		<-sp.done
		prevMap, prevLen := mapOf(prev), len(prev.entries)
		writeCall(t, s, "new"+strconv.Itoa(i), "added")
		next, err := s.loadIndex()
		if err != nil {
			t.Fatal(err)
		}
		if mapOf(next) != reflect.ValueOf(sp.m).UnsafePointer() {
			t.Fatalf("call %d: the next manifest was not built in the copy made ahead", i)
		}
		if mapOf(next) == prevMap || len(prev.entries) != prevLen || prev.entries["new"+strconv.Itoa(i)] != nil {
			t.Fatalf("call %d: the previous manifest was changed in place", i)
		}
	}
	// What the updates built is what the tree holds.
	cur, err := s.loadIndex()
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.scan(ctx, newIndex())
	if err != nil {
		t.Fatal(err)
	}
	if d := diffIndex(cur, full); len(d) != 0 {
		t.Fatalf("the manifest differs from a full scan: %+v", d)
	}
}
