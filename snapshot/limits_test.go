package snapshot_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

const mib = 1 << 20

func openWS(t *testing.T, opts ...snapshot.Option) (string, *snapshot.Store) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.Open(context.Background(), filepath.Join(base, "state"), ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ws, st
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// storeBytes is the size of every blob in the store, as on disk.
func storeBytes(t *testing.T, st *snapshot.Store) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(filepath.Join(st.Dir(), "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// rewrite runs one whole-workspace call that writes data to rel.
func rewrite(t *testing.T, st *snapshot.Store, ws, rel string, data []byte) (snapshot.Entry, error) {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		return snapshot.Entry{}, err
	}
	if err := os.WriteFile(filepath.Join(ws, rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return c.Finish(ctx)
}

// TestAutoGC: a run that rewrites a large file again and again keeps the
// store under max_bytes with automatic gc, and passes it without; what is
// kept still undoes.
func TestAutoGC(t *testing.T) {
	const limit = 4 * mib
	for _, tc := range []struct {
		name string
		auto bool
	}{{"auto", true}, {"off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []snapshot.Option
			if tc.auto {
				opts = append(opts, snapshot.WithAutoGC(snapshot.GCPolicy{MaxBytes: limit}))
			}
			ws, st := openWS(t, opts...)
			must(t, os.WriteFile(filepath.Join(ws, "small.txt"), []byte("keep me"), 0o644))
			var versions [][]byte
			var peak int64
			for i := 0; i < 12; i++ {
				data := randomBytes(t, mib)
				versions = append(versions, data)
				if _, err := rewrite(t, st, ws, "big.bin", data); err != nil {
					t.Fatal(err)
				}
				peak = max(peak, storeBytes(t, st))
			}
			if !tc.auto {
				if peak <= limit {
					t.Fatalf("without auto gc the store stayed at %d bytes: the run does not test anything", peak)
				}
				return
			}
			if peak > limit {
				t.Fatalf("store reached %d bytes, over the %d limit", peak, limit)
			}
			list, _ := st.List(context.Background(), 0)
			if len(list) >= 12 {
				t.Fatalf("%d entries kept: nothing was collected", len(list))
			}
			// The newest call still undoes to the version before it.
			if _, err := st.Undo(context.Background(), list[0].ID, false, snapshot.CallInfo{}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(ws, "big.bin")); string(got) != string(versions[len(versions)-2]) {
				t.Fatal("undo after auto gc did not restore the previous version")
			}
			// An explicit gc agrees with the running size: nothing left over.
			stats, err := st.GC(context.Background(), snapshot.GCPolicy{MaxBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := storeBytes(t, st); got != stats.BytesKept {
				t.Fatalf("store holds %d bytes, gc kept %d", got, stats.BytesKept)
			}
		})
	}
}

// TestAutoGCSharedUsage: two stores on one directory (two processes)
// keep one running size: it stays exact as each adds blobs, GC keeps the
// store under the limit whichever of them passes it, and a usage file
// that cannot be read (longer than the fixed record, garbage) is
// recounted, not trusted.
func TestAutoGCSharedUsage(t *testing.T) {
	const limit = 4 * mib
	opt := snapshot.WithAutoGC(snapshot.GCPolicy{MaxBytes: limit})
	ws, a := openWS(t, opt)
	b, err := snapshot.Open(context.Background(), filepath.Dir(a.Dir()), ws, opt)
	if err != nil {
		t.Fatal(err)
	}
	usage := func() int64 {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(a.Dir(), "usage"))
		if err != nil {
			t.Fatal(err)
		}
		var u struct{ Bytes int64 }
		if err := json.Unmarshal(data, &u); err != nil {
			t.Fatalf("usage file %q: %v", data, err)
		}
		return u.Bytes
	}
	var peak int64
	for i := range 10 {
		st := []*snapshot.Store{a, b}[i%2]
		if i == 5 {
			// Longer than the record, and not JSON: recounted.
			must(t, os.WriteFile(filepath.Join(a.Dir(), "usage"), []byte(strings.Repeat("9", 100)), 0o600))
		}
		if _, err := rewrite(t, st, ws, "big.bin", randomBytes(t, mib/2)); err != nil {
			t.Fatal(err)
		}
		if got, want := usage(), storeBytes(t, a); got != want {
			t.Fatalf("call %d: the running size is %d, the store holds %d", i, got, want)
		}
		peak = max(peak, storeBytes(t, a))
	}
	if peak > limit {
		t.Fatalf("store reached %d bytes, over the %d limit", peak, limit)
	}
	if list, _ := a.List(context.Background(), 0); len(list) >= 10 {
		t.Fatalf("%d entries kept: nothing was collected", len(list))
	}
}

// TestCallCap: before a call, pre-images over the cap refuse it (nothing
// journaled, at most the cap written); after a call, content over the cap
// is recorded by hash as Unstored, and the next call must store it first.
func TestCallCap(t *testing.T) {
	ctx := context.Background()
	const limit = 1 * mib
	ws, st := openWS(t, snapshot.WithMaxCallBytes(limit))
	must(t, os.WriteFile(filepath.Join(ws, "small.txt"), []byte("small"), 0o644))
	if _, err := rewrite(t, st, ws, "small.txt", []byte("baseline")); err != nil {
		t.Fatal(err)
	}
	big := randomBytes(t, 3*mib)
	before := storeBytes(t, st)
	e, err := rewrite(t, st, ws, "big.bin", big)
	if err != nil {
		t.Fatalf("a call is never refused after it ran: %v", err)
	}
	sum := sha256.Sum256(big)
	if len(e.Changes) != 1 || e.Changes[0].New == nil || !e.Changes[0].New.Unstored || e.Changes[0].New.Hash != hex.EncodeToString(sum[:]) {
		t.Fatalf("changes %+v, want big.bin added, hashed, unstored", e.Changes)
	}
	if grew := storeBytes(t, st) - before; grew > limit {
		t.Fatalf("the call stored %d new bytes, over the %d cap", grew, limit)
	}
	// The next calls, whole or for the file alone, would run without its
	// pre-image: refused.
	for _, scope := range []snapshot.Scope{snapshot.Whole(), snapshot.File("big.bin")} {
		n := len(mustList(t, st))
		before := storeBytes(t, st)
		_, err = st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, scope)
		var le *snapshot.LimitError
		if !errors.Is(err, snapshot.ErrTooLarge) || !errors.As(err, &le) {
			t.Fatalf("Begin(%+v) = %v, want ErrTooLarge", scope, err)
		}
		for _, want := range []string{"max_call_bytes", "nothing was changed", "big.bin", "agentbox checkpoint"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if len(mustList(t, st)) != n {
			t.Fatal("a refused call was journaled")
		}
		if grew := storeBytes(t, st) - before; grew > limit {
			t.Fatalf("a refused Begin stored %d bytes, over the cap", grew)
		}
	}
	// Content the store has already costs nothing: a copy is not refused
	// once a checkpoint (not capped) recorded the tree.
	if _, err := st.Checkpoint(ctx, "baseline", snapshot.CallInfo{}); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if _, err := rewrite(t, st, ws, "copy.bin", big); err != nil {
		t.Fatalf("a call whose content is already stored: %v", err)
	}
	// An undo of the call whose content was unstored works (its pre-image
	// was absent), and a redo uses the checkpoint's copy.
	u, err := st.Undo(ctx, e.ID, true, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Undo(ctx, u.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("redo: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "big.bin")); string(got) != string(big) {
		t.Fatal("redo did not restore big.bin")
	}
}

func mustList(t *testing.T, st *snapshot.Store) []snapshot.Entry {
	t.Helper()
	l, err := st.List(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFreeSpaceFloor: calls are refused below the floor, a call's
// pre-images may not take the filesystem below it, and a call that ran
// records what it cannot keep as Unstored.
func TestFreeSpaceFloor(t *testing.T) {
	ctx := context.Background()
	const floor = 100 * mib
	var free atomic.Int64
	free.Store(1 << 40)
	probe := func(dir string) (int64, error) { return free.Load(), nil }
	ws, st := openWS(t, snapshot.WithMinFreeBytes(floor), snapshot.WithFreeSpace(probe))
	if _, err := rewrite(t, st, ws, "a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		free  int64
		write int // bytes the call writes
		begin bool
		after bool // the content written was kept
	}{
		{name: "plenty", free: 1 << 40, write: 2 * mib, begin: true, after: true},
		{name: "below the floor", free: floor - 1, write: 0, begin: false},
		{name: "at the floor", free: floor, write: 0, begin: false},
		{name: "room for less than the call writes", free: floor + mib/2, write: 2 * mib, begin: true, after: false},
		// The unstored file must be stored first; 512 KiB of room do not
		// hold it.
		{name: "next call needs the unstored content", free: floor + mib/2, write: 0, begin: false},
		{name: "room again", free: 1 << 40, write: 10, begin: true, after: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			free.Store(tc.free)
			n := len(mustList(t, st))
			e, err := rewrite(t, st, ws, "f.bin", randomBytes(t, tc.write))
			if !tc.begin {
				if !errors.Is(err, snapshot.ErrNoSpace) {
					t.Fatalf("err %v, want ErrNoSpace", err)
				}
				for _, want := range []string{"agentbox snapshots gc", "min_free_bytes", "nothing was changed"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if len(mustList(t, st)) != n {
					t.Fatal("a refused call was journaled")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var node *snapshot.Node
			for _, c := range e.Changes {
				if c.Path == "f.bin" {
					node = c.New
				}
			}
			if node == nil {
				t.Fatalf("changes %+v lack f.bin", e.Changes)
			}
			if node.Unstored == tc.after {
				t.Fatalf("f.bin unstored = %v, want %v", node.Unstored, !tc.after)
			}
		})
	}
	free.Store(floor - 1)
	if _, err := st.Checkpoint(ctx, "", snapshot.CallInfo{}); !errors.Is(err, snapshot.ErrNoSpace) {
		t.Fatalf("checkpoint below the floor: %v", err)
	}
}
