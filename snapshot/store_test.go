package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"42", "000042", true},
		{"000042", "000042", true},
		{" 7 ", "000007", true},
		{"1234567", "1234567", true},
		{"0", "", false},
		{"-1", "", false},
		{"abc", "", false},
		{"", "", false},
	} {
		got, err := snapshot.Resolve(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, snapshot.ErrNotFound) {
			t.Errorf("Resolve(%q) error %v does not wrap ErrNotFound", tc.in, err)
		}
	}
}

func TestExclude(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "src", "node_modules", "x"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "build", "out"), 0o755))
	st, err := snapshot.Open(context.Background(), filepath.Join(base, "state"), ws, snapshot.WithExclude("node_modules", "build/out"))
	if err != nil {
		t.Fatal(err)
	}
	e := call(t, st, func() {
		for _, p := range []string{"src/node_modules/x/a.js", "build/out/bin", "build/keep", "src/main.go"} {
			must(t, os.WriteFile(filepath.Join(ws, p), []byte("x"), 0o644))
		}
	})
	got := map[string]bool{}
	for _, c := range e.Changes {
		got[c.Path] = true
	}
	if len(got) != 2 || !got["build/keep"] || !got["src/main.go"] {
		t.Fatalf("changes %v; want only build/keep and src/main.go", got)
	}
	if _, err := snapshot.Open(context.Background(), filepath.Join(base, "state"), ws, snapshot.WithExclude("[")); err == nil {
		t.Fatal("a bad pattern was accepted")
	}
}

func TestFileScopeThroughSymlinkScansAll(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	w.Write("real/target.txt", "before", 0o644)
	w.Symlink("real", "alias")
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File("alias/target.txt"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(w.Dir, "alias/target.txt"), []byte("after"), 0o644))
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Changes) != 1 || e.Changes[0].Path != "real/target.txt" || e.Changes[0].Op != snapshot.OpModified {
		t.Fatalf("changes %+v; want real/target.txt modified", e.Changes)
	}
}

func TestAbortAndLock(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	// A second executor on the same store opens it, and its Begin waits
	// for the lock until its context ends.
	st2, err := snapshot.Open(ctx, filepath.Join(filepath.Dir(w.Dir), "state"), w.Dir)
	if err != nil {
		t.Fatalf("Open while a call holds the lock: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := st2.Begin(short, snapshot.CallInfo{}, snapshot.Whole()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Begin: %v, want a deadline error", err)
	}
	// A whole-workspace call holds only the shell lock while its command
	// runs: undo and file-scoped calls go on.
	if _, err := st.Undo(short, "", false, snapshot.CallInfo{}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("Undo during a shell call: %v, want not found (nothing journaled yet)", err)
	}
	fc, err := st2.Begin(short, snapshot.CallInfo{}, snapshot.File("f"))
	if err != nil {
		t.Fatalf("file Begin during a shell call: %v", err)
	}
	// A file-scoped call holds the store lock until it ends.
	if _, err := st.Undo(short, "", false, snapshot.CallInfo{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Undo during a file call: %v, want a deadline error", err)
	}
	if err := fc.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := st.List(ctx, 0); len(list) != 0 {
		t.Fatalf("aborted call journaled: %v", list)
	}
	if _, err := st.Begin(ctx, snapshot.CallInfo{}, snapshot.Whole()); err != nil {
		t.Fatalf("Begin after Abort: %v", err)
	}
}

func TestGC(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 6; i++ {
		data := strings.Repeat(string(rune('a'+i)), 1000)
		ids = append(ids, call(t, st, func() { w.Write("f", data, 0o644) }).ID)
	}
	stats, err := st.GC(ctx, snapshot.GCPolicy{KeepCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	if stats.EntriesRemoved != 4 || stats.EntriesKept != 2 {
		t.Fatalf("gc stats %+v", stats)
	}
	// Versions a..c are referenced by nothing now; d (old of the 5th),
	// e and f stay.
	if stats.BlobsRemoved != 3 {
		t.Fatalf("removed %d blobs, want 3", stats.BlobsRemoved)
	}
	if _, err := st.Get(ctx, ids[0]); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("dropped entry still there: %v", err)
	}
	// What is kept still undoes.
	if _, err := st.Undo(ctx, ids[5], false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(w.Dir, "f")); string(data) != strings.Repeat("e", 1000) {
		t.Fatalf("after undo f = %.10q", data)
	}
	// Age and size limits; the newest entry always stays.
	if _, err := st.GC(ctx, snapshot.GCPolicy{MaxAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if list, _ := st.List(ctx, 0); len(list) != 1 {
		t.Fatalf("after age gc: %d entries, want 1", len(list))
	}
	stats, err = st.GC(ctx, snapshot.GCPolicy{MaxBytes: 1})
	if err != nil || stats.EntriesKept != 1 {
		t.Fatalf("size gc: %+v %v", stats, err)
	}
	// The current tree's content is never collected.
	e := call(t, st, func() { w.Remove("f") })
	if _, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("undo after gc: %v", err)
	}
}

func TestDiff(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	w.Write("a.txt", "one\ntwo\nthree\n", 0o644)
	w.Write("bin", "\x00\x01", 0o644)
	call(t, st, func() {})
	e := call(t, st, func() {
		w.Write("a.txt", "one\n2\nthree\n", 0o644)
		w.Write("bin", "\x00\x02", 0o644)
		w.Symlink("a.txt", "link")
		w.Chmod("a.txt", 0o755)
	})
	var b bytes.Buffer
	if err := st.Diff(ctx, e.ID, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"--- a/a.txt", "+++ b/a.txt", "-two", "+2", "old mode 000644", "new mode 000755",
		"Binary or special content: file 2 bytes", "+-> a.txt", "new symlink"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if err := st.Diff(ctx, "999", &b); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("diff of unknown call: %v", err)
	}
}

// With WithSerialCalls a whole-workspace call holds the store lock from
// Begin to Finish: file-scoped calls and undo wait for it, as before
// concurrent calls.
func TestSerialCalls(t *testing.T) {
	ctx := context.Background()
	for _, serial := range []bool{false, true} {
		t.Run(fmt.Sprint("serial=", serial), func(t *testing.T) {
			base := t.TempDir()
			ws := filepath.Join(base, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			st, err := snapshot.Open(ctx, filepath.Join(base, "state"), ws, snapshot.WithSerialCalls(serial))
			if err != nil {
				t.Fatal(err)
			}
			c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "shell.txt"), []byte("shell"), 0o644); err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			fc, err := st.Begin(short, snapshot.CallInfo{Tool: "Write"}, snapshot.File("w.txt"))
			if serial {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("file Begin during a serial shell call: %v, want a deadline error", err)
				}
			} else {
				if err != nil {
					t.Fatalf("file Begin during a shell call: %v", err)
				}
				if err := os.WriteFile(filepath.Join(ws, "w.txt"), []byte("write"), 0o644); err != nil {
					t.Fatal(err)
				}
				fe, err := fc.Finish(ctx)
				if err != nil || len(fe.Changes) != 1 || fe.Changes[0].Path != "w.txt" {
					t.Fatalf("file call: %+v, %v; want w.txt alone", fe.Changes, err)
				}
			}
			// Two shell commands serialize either way.
			if _, err := st.Begin(short, snapshot.CallInfo{}, snapshot.Whole()); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("second shell Begin: %v, want a deadline error", err)
			}
			e, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := changedPaths(e); !slices.Equal(got, []string{"shell.txt"}) {
				t.Fatalf("shell entry %v, want [shell.txt]", got)
			}
			if c.ID() != e.ID {
				t.Fatalf("ID() %s after Finish, entry %s", c.ID(), e.ID)
			}
		})
	}
}

// must fails the test on a fixture step's error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
