package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestConcurrentAppendGroupCommit: goroutines on two Logs of one file
// (two processes, as far as the flock is concerned), interleaved with
// Flushes, keep one valid chain, and Close leaves every record on disk.
func TestConcurrentAppendGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l1, _ := Open(path)
	l2, _ := Open(path)
	var wg sync.WaitGroup
	const n = 60
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := l1
			if i%3 == 1 {
				l = l2
			}
			if err := l.Append(context.Background(), Record{CallID: "c", Input: []byte(`{"i":1}`)}); err != nil {
				t.Error(err)
			}
			if i%7 == 0 {
				if err := l.Flush(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
	if err := errors.Join(l1.Close(), l2.Close()); err != nil {
		t.Fatal(err)
	}
	if n2, err := l1.Verify(); n2 != n || err != nil {
		t.Fatalf("verify: %d %v", n2, err)
	}
}

// TestAlternatingWriters: a Log whose last write was followed by another
// writer's must chain to that writer's record, not to the hash it keeps.
func TestAlternatingWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l1, _ := Open(path)
	l2, _ := Open(path)
	defer l1.Close()
	defer l2.Close()
	for i, l := range []*Log{l1, l1, l2, l1, l2, l2, l1} {
		if err := l.Append(context.Background(), Record{CallID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l1.Verify(); n != 7 || err != nil {
		t.Fatalf("verify: %d %v", n, err)
	}
}

// TestReopenAfterRemove: a removed log is created again, as it was when
// every append opened the path, and a replaced one is written where the
// path points.
func TestReopenAfterRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	defer l.Close()
	appendN(t, l, 2)
	must(t, os.Remove(path))
	appendN(t, l, 1)
	if n, err := l.Verify(); n != 1 || err != nil {
		t.Fatalf("verify after remove: %d %v", n, err)
	}
	other := filepath.Join(filepath.Dir(path), "other.jsonl")
	l2, _ := Open(other)
	appendN(t, l2, 3)
	l2.Close()
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1)
	if n, err := l.Verify(); n != 4 || err != nil {
		t.Fatalf("verify after replace: %d %v", n, err)
	}
}

// syncHook replaces a Log's fsync.
type syncHook struct {
	calls   atomic.Int32
	release chan struct{} // when non-nil, each fsync waits for it
	fail    atomic.Bool
	size    atomic.Int64 // the file's size at the last fsync
}

func (h *syncHook) sync(f *os.File) error {
	if h.release != nil {
		<-h.release
	}
	h.calls.Add(1)
	if fi, err := f.Stat(); err == nil {
		h.size.Store(fi.Size())
	}
	if h.fail.Load() {
		return syscall.EIO
	}
	return f.Sync()
}

// TestAppendDoesNotWaitForFsync: Append returns while the fsync is held
// up; Flush and Close wait for it and leave the whole file synced.
func TestAppendDoesNotWaitForFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, _ := Open(path)
	h := &syncHook{release: make(chan struct{})}
	l.sync = h.sync
	done := make(chan error)
	go func() {
		for i := 0; i < 5; i++ {
			if err := l.Append(context.Background(), Record{CallID: "c"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Append waits for the fsync")
	}
	if h.calls.Load() != 0 {
		t.Fatalf("%d fsyncs ran while held", h.calls.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush returned %v while the fsync was held", err)
	}
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	close(h.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if h.size.Load() != fi.Size() || h.calls.Load() == 0 {
		t.Fatalf("last fsync saw %d bytes of %d (%d fsyncs)", h.size.Load(), fi.Size(), h.calls.Load())
	}
	// Group commit: fewer fsyncs than records (the first covers all five).
	if c := h.calls.Load(); c >= 5 {
		t.Fatalf("%d fsyncs for 5 records", c)
	}
}

// TestDeferredFsyncError: a failed background fsync is logged and
// returned by Flush, the next Append and Close; the Log refuses records
// from then on.
func TestDeferredFsyncError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logged bytes.Buffer
	var mu sync.Mutex
	l, _ := Open(path, WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))))
	h := &syncHook{}
	h.fail.Store(true)
	l.sync = h.sync
	if err := l.Append(context.Background(), Record{CallID: "a"}); err != nil {
		t.Fatalf("the first Append fails before its fsync: %v", err)
	}
	if err := l.Flush(context.Background()); !errors.Is(err, ErrNotDurable) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush = %v, want ErrNotDurable", err)
	}
	before, _ := os.ReadFile(path)
	if err := l.Append(context.Background(), Record{CallID: "b"}); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Append after a failed fsync = %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("a record was appended after the fsync failed")
	}
	if err := l.Close(); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Close = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "fsync failed") {
		t.Fatalf("not logged: %q", logged.String())
	}
}

// TestDeferredFsyncErrorNextAppend: without a Flush, the Append after the
// failed fsync reports it.
func TestDeferredFsyncErrorNextAppend(t *testing.T) {
	l, _ := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	h := &syncHook{}
	h.fail.Store(true)
	l.sync = h.sync
	if err := l.Append(context.Background(), Record{CallID: "a"}); err != nil {
		t.Fatal(err)
	}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if err = l.Append(context.Background(), Record{CallID: "b"}); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Appends after a failed fsync: %v", err)
	}
	l.Close()
}

// TestSyncEachRecord: the option fsyncs inside Append.
func TestSyncEachRecord(t *testing.T) {
	l, _ := Open(filepath.Join(t.TempDir(), "audit.jsonl"), SyncEachRecord())
	h := &syncHook{}
	l.sync = h.sync
	appendN(t, l, 3)
	if c := h.calls.Load(); c != 3 {
		t.Fatalf("%d fsyncs for 3 records", c)
	}
	h.fail.Store(true)
	if err := l.Append(context.Background(), Record{CallID: "x"}); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Append with a failing fsync = %v", err)
	}
	l.Close()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// BenchmarkAppend: one record like a Write call's (about 2 KB of masked
// input), group commit against an fsync in every Append, in one run.
func BenchmarkAppend(b *testing.B) {
	raw, _ := json.Marshal(map[string]string{"file_path": "/w/bench.txt", "content": benchContent})
	in := MaskInput(raw)
	for _, c := range []struct {
		name string
		opts []Option
	}{{"group-commit", nil}, {"sync-each", []Option{SyncEachRecord()}}} {
		b.Run(c.name, func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := l.Append(context.Background(), Record{CallID: "c", Tool: "Write", Input: in}); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkMaskInput masks a Write call's input like the bench's.
func BenchmarkMaskInput(b *testing.B) {
	raw, _ := json.Marshal(map[string]string{"file_path": "/w/bench.txt", "content": benchContent})
	for b.Loop() {
		MaskInput(raw)
	}
}

// TestEncodeCanonical: the line Append writes is the record's canonical
// encoding with the hash Sum gives, also for text JSON escapes.
func TestEncodeCanonical(t *testing.T) {
	r := Record{CallID: "c", Tool: "Bash", Input: json.RawMessage(`{"command":"echo '<a&b>' \u2028 é"}`), Error: "line\n\"quoted\" <tag> \x01", Prev: "p"}
	line, err := encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(r)
	if sum, _ := Sum(r); sum != r.Hash || string(line) != string(want)+"\n" {
		t.Fatalf("encode = %s (hash %s), want %s (hash %s)", line, r.Hash, want, sum)
	}
}
