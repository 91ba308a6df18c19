package snapshottest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// Opener opens the store under test for workspace, keeping its state in
// stateDir (outside the workspace).
type Opener func(t testing.TB, stateDir, workspace string) *snapshot.Store

// Case is one kind of change: Setup builds the tree before the call,
// Change is what the call does, Want the ops the journal must record.
type Case struct {
	Name   string
	Setup  func(w W)
	Change func(w W)
	Want   map[string]snapshot.Op
	// File, when set, also runs the case through the single-file fast path
	// with this scope.
	File string
}

var bin = string([]byte{0, 1, 2, 3, 255, 254, 0, 'x'})

// Cases are the table of the conformance suite.
var Cases = []Case{
	{Name: "add file", Change: func(w W) { w.Write("a.txt", "hello\n", 0o644) },
		Want: map[string]snapshot.Op{"a.txt": snapshot.OpAdded}, File: "a.txt"},
	{Name: "modify file", Setup: func(w W) { w.Write("a.txt", "one\ntwo\n", 0o644) }, Change: func(w W) { w.Write("a.txt", "one\nthree\n", 0o644) },
		Want: map[string]snapshot.Op{"a.txt": snapshot.OpModified}, File: "a.txt"},
	{Name: "modify same size same second", Setup: func(w W) { w.Write("a.txt", "aaaa", 0o644) }, Change: func(w W) { w.Write("a.txt", "bbbb", 0o644) },
		Want: map[string]snapshot.Op{"a.txt": snapshot.OpModified}},
	{Name: "empty file", Setup: func(w W) { w.Write("e", "x", 0o644) }, Change: func(w W) { w.Write("e", "", 0o644) },
		Want: map[string]snapshot.Op{"e": snapshot.OpModified}, File: "e"},
	{Name: "delete file", Setup: func(w W) { w.Write("d/a.txt", "bye", 0o600) }, Change: func(w W) { w.Remove("d/a.txt") },
		Want: map[string]snapshot.Op{"d/a.txt": snapshot.OpDeleted}, File: "d/a.txt"},
	{Name: "chmod file", Setup: func(w W) { w.Write("run.sh", "#!/bin/sh\n", 0o644) }, Change: func(w W) { w.Chmod("run.sh", 0o755) },
		Want: map[string]snapshot.Op{"run.sh": snapshot.OpModeChanged}, File: "run.sh"},
	{Name: "special mode bits", Setup: func(w W) { w.Mkdir("tmp", 0o755); w.Write("s", "x", 0o644) },
		Change: func(w W) { w.Chmod("tmp", 0o1777); w.Chmod("s", 0o4755|os.ModeSetuid) },
		Want:   map[string]snapshot.Op{"tmp": snapshot.OpModeChanged, "s": snapshot.OpModeChanged}},
	{Name: "chmod dir", Setup: func(w W) { w.Write("d/f", "x", 0o644) }, Change: func(w W) { w.Chmod("d", 0o700) },
		Want: map[string]snapshot.Op{"d": snapshot.OpModeChanged}},
	{Name: "file to dir", Setup: func(w W) { w.Write("x", "file", 0o644) }, Change: func(w W) { w.Remove("x"); w.Write("x/inner", "in", 0o644) },
		Want: map[string]snapshot.Op{"x": snapshot.OpTypeChanged, "x/inner": snapshot.OpAdded}},
	{Name: "dir to file", Setup: func(w W) { w.Write("x/a/b", "deep", 0o644); w.Mkdir("x/empty", 0o755) }, Change: func(w W) { w.Remove("x"); w.Write("x", "now a file", 0o600) },
		Want: map[string]snapshot.Op{"x": snapshot.OpTypeChanged, "x/a": snapshot.OpDeleted, "x/a/b": snapshot.OpDeleted, "x/empty": snapshot.OpDeleted}},
	{Name: "file to symlink", Setup: func(w W) { w.Write("l", "content", 0o644); w.Write("t", "target", 0o644) }, Change: func(w W) { w.Remove("l"); w.Symlink("t", "l") },
		Want: map[string]snapshot.Op{"l": snapshot.OpTypeChanged}},
	{Name: "symlink to file", Setup: func(w W) { w.Write("t", "target", 0o644); w.Symlink("t", "l") }, Change: func(w W) { w.Remove("l"); w.Write("l", "mine", 0o644) },
		Want: map[string]snapshot.Op{"l": snapshot.OpTypeChanged}, File: "l"},
	{Name: "symlink retarget outward", Setup: func(w W) { w.Symlink("a", "l") }, Change: func(w W) { w.Remove("l"); w.Symlink("../../../etc/passwd", "l") },
		Want: map[string]snapshot.Op{"l": snapshot.OpModified}},
	{Name: "dir to symlink", Setup: func(w W) { w.Write("d/f", "x", 0o644) }, Change: func(w W) { w.Remove("d"); w.Symlink("/", "d") },
		Want: map[string]snapshot.Op{"d": snapshot.OpTypeChanged, "d/f": snapshot.OpDeleted}},
	{Name: "add empty dirs", Change: func(w W) { w.Mkdir("e1/e2/e3", 0o750) },
		Want: map[string]snapshot.Op{"e1": snapshot.OpAdded, "e1/e2": snapshot.OpAdded, "e1/e2/e3": snapshot.OpAdded}},
	{Name: "delete tree", Setup: func(w W) {
		w.Write("t/a/1", "1", 0o644)
		w.Write("t/a/2", "2", 0o644)
		w.Mkdir("t/b", 0o700)
		w.Symlink("a/1", "t/l")
	},
		Change: func(w W) { w.Remove("t") },
		Want: map[string]snapshot.Op{"t": snapshot.OpDeleted, "t/a": snapshot.OpDeleted, "t/a/1": snapshot.OpDeleted, "t/a/2": snapshot.OpDeleted,
			"t/b": snapshot.OpDeleted, "t/l": snapshot.OpDeleted}},
	{Name: "rename", Setup: func(w W) { w.Write("old.go", "package x\n", 0o644) }, Change: func(w W) { w.Rename("old.go", "new.go") },
		Want: map[string]snapshot.Op{"old.go": snapshot.OpDeleted, "new.go": snapshot.OpAdded}},
	{Name: "new file in new dirs", Change: func(w W) { w.Write("n1/n2/f.txt", "x", 0o644) },
		Want: map[string]snapshot.Op{"n1": snapshot.OpAdded, "n1/n2": snapshot.OpAdded, "n1/n2/f.txt": snapshot.OpAdded}, File: "n1/n2/f.txt"},
	{Name: "binary large", Setup: func(w W) { w.Write("big.bin", strings.Repeat(bin, 400_000), 0o644) },
		Change: func(w W) { w.Write("big.bin", strings.Repeat(bin, 400_000)+"tail", 0o644) },
		Want:   map[string]snapshot.Op{"big.bin": snapshot.OpModified}, File: "big.bin"},
	{Name: "fifo", Change: func(w W) { w.Mkfifo("pipe") },
		Want: map[string]snapshot.Op{"pipe": snapshot.OpAdded}},
	{Name: "odd names", Setup: func(w W) { w.Write("new\nline", "n", 0o644) },
		Change: func(w W) {
			w.Write("bad\xff\xfe.txt", "b", 0o644)
			w.Remove("new\nline")
			w.Write("sp ace/\t tab", "t", 0o644)
		},
		Want: map[string]snapshot.Op{"bad\xff\xfe.txt": snapshot.OpAdded, "new\nline": snapshot.OpDeleted,
			"sp ace": snapshot.OpAdded, "sp ace/\t tab": snapshot.OpAdded}},
	{Name: "no change", Setup: func(w W) { w.Write("a", "a", 0o644) }, Change: func(w W) {}, Want: map[string]snapshot.Op{}},
}

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	t.Run("Cases", func(t *testing.T) { RunCases(t, open) })
	t.Run("EditorUndo", func(t *testing.T) { testEditorUndo(t, open) })
	t.Run("Conflict", func(t *testing.T) { testConflict(t, open) })
	t.Run("CheckpointRollback", func(t *testing.T) { testCheckpoint(t, open) })
	t.Run("Random", func(t *testing.T) { RunRandom(t, open, 1, 30) })
}

// setup makes a workspace and state dir and opens a store.
func setup(t *testing.T, open Opener) (W, *snapshot.Store) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return W{T: t, Dir: ws}, open(t, filepath.Join(base, "state"), ws)
}

func ops(e snapshot.Entry) map[string]snapshot.Op {
	m := map[string]snapshot.Op{}
	for _, c := range e.Changes {
		m[c.Path] = c.Op
	}
	return m
}

func sameOps(a, b map[string]snapshot.Op) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// RunCases runs every Case through call, undo, redo and rollback.
func RunCases(t *testing.T, open Opener) {
	for _, c := range Cases {
		scopes := []string{""}
		if c.File != "" {
			scopes = append(scopes, c.File)
		}
		for _, scope := range scopes {
			name := c.Name
			if scope != "" {
				name += "/file-scope"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				w, st := setup(t, open)
				if c.Setup != nil {
					c.Setup(w)
				}
				// A first call establishes the manifest, like an agent's
				// earlier calls would.
				if _, err := st.Checkpoint(ctx, "start", snapshot.CallInfo{}); err != nil {
					t.Fatal(err)
				}
				pre := Capture(t, w.Dir)
				call, err := st.Begin(ctx, snapshot.CallInfo{Session: "s", Tool: "Bash", Summary: c.Name}, snapshot.Scope{Path: scope})
				if err != nil {
					t.Fatal(err)
				}
				c.Change(w)
				e, err := call.Finish(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := ops(e); !sameOps(got, c.Want) {
					t.Fatalf("changes = %v, want %v", got, c.Want)
				}
				if e.ID != call.ID() {
					t.Fatalf("entry ID %s, call ID %s", e.ID, call.ID())
				}
				got, err := st.Get(ctx, e.ID)
				if err != nil || !sameOps(ops(got), c.Want) {
					t.Fatalf("Get = %v, %v", ops(got), err)
				}
				post := Capture(t, w.Dir)
				var buf bytes.Buffer
				if err := st.Diff(ctx, e.ID, &buf); err != nil {
					t.Fatalf("diff: %v", err)
				}
				if len(c.Want) > 0 && buf.Len() == 0 {
					t.Fatal("empty diff")
				}
				if len(c.Want) == 0 {
					if _, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{}); err == nil {
						t.Fatal("undo of an empty call succeeded")
					}
					return
				}
				u, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{})
				if err != nil {
					t.Fatalf("undo: %v", err)
				}
				RequireEqual(t, "after undo", pre, Capture(t, w.Dir))
				if u.Reverts != e.ID || u.Kind != snapshot.KindUndo {
					t.Fatalf("undo entry %+v", u)
				}
				if _, err := st.Undo(ctx, u.ID, false, snapshot.CallInfo{}); err != nil {
					t.Fatalf("redo: %v", err)
				}
				RequireEqual(t, "after redo", post, Capture(t, w.Dir))
				if _, err := st.Rollback(ctx, e.ID, snapshot.CallInfo{}); err != nil {
					t.Fatalf("rollback: %v", err)
				}
				RequireEqual(t, "after rollback", pre, Capture(t, w.Dir))
			})
		}
	}
}

func whole(t *testing.T, st *snapshot.Store, summary string, fn func()) snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: summary}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	fn()
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func testEditorUndo(t *testing.T, open Opener) {
	ctx := context.Background()
	w, st := setup(t, open)
	s0 := Capture(t, w.Dir)
	e1 := whole(t, st, "one", func() { w.Write("a", "1", 0o644) })
	s1 := Capture(t, w.Dir)
	whole(t, st, "nothing", func() {})
	e3 := whole(t, st, "two", func() { w.Write("a", "2", 0o644); w.Write("b", "b", 0o644) })
	u1, err := st.Undo(ctx, "", false, snapshot.CallInfo{})
	if err != nil || u1.Reverts != e3.ID {
		t.Fatalf("first undo reverted %q, %v; want %s", u1.Reverts, err, e3.ID)
	}
	RequireEqual(t, "after first undo", s1, Capture(t, w.Dir))
	u2, err := st.Undo(ctx, "", false, snapshot.CallInfo{})
	if err != nil || u2.Reverts != e1.ID {
		t.Fatalf("second undo reverted %q, %v; want %s (skipping the empty call and the undone one)", u2.Reverts, err, e1.ID)
	}
	RequireEqual(t, "after second undo", s0, Capture(t, w.Dir))
	if _, err := st.Undo(ctx, "", false, snapshot.CallInfo{}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("third undo: %v, want ErrNotFound", err)
	}
	// Redo the last undo, then undo walks back again.
	if _, err := st.Undo(ctx, u2.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	RequireEqual(t, "after redo", s1, Capture(t, w.Dir))
	list, err := st.List(ctx, 0)
	if err != nil || len(list) != 6 {
		t.Fatalf("List: %d entries, %v", len(list), err)
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].ID <= list[i].ID {
			t.Fatalf("List not newest first: %s before %s", list[i-1].ID, list[i].ID)
		}
	}
	if l, _ := st.List(ctx, 2); len(l) != 2 {
		t.Fatalf("List(2) = %d entries", len(l))
	}
}

func testConflict(t *testing.T, open Opener) {
	ctx := context.Background()
	w, st := setup(t, open)
	e1 := whole(t, st, "write", func() { w.Write("a", "agent", 0o644); w.Write("b", "b", 0o644) })
	e2 := whole(t, st, "later", func() { w.Write("b", "later", 0o644) })
	w.Write("a", "user edit", 0o644)
	_, err := st.Undo(ctx, e1.ID, false, snapshot.CallInfo{})
	var ce *snapshot.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, snapshot.ErrConflict) {
		t.Fatalf("undo: %v, want a conflict", err)
	}
	got := map[string]string{}
	for _, c := range ce.Conflicts {
		got[c.Path] = c.By
	}
	if len(got) != 2 || got["b"] != e2.ID {
		t.Fatalf("conflicts %+v; want a (by no call) and b (by %s)", ce.Conflicts, e2.ID)
	}
	if data, _ := os.ReadFile(filepath.Join(w.Dir, "a")); string(data) != "user edit" {
		t.Fatal("a conflicting undo changed the tree")
	}
	if _, err := st.Undo(ctx, e1.ID, true, snapshot.CallInfo{}); err != nil {
		t.Fatalf("forced undo: %v", err)
	}
	if tr := Capture(t, w.Dir); len(tr) != 0 {
		t.Fatalf("after forced undo: %v", tr)
	}
}

func testCheckpoint(t *testing.T, open Opener) {
	ctx := context.Background()
	w, st := setup(t, open)
	w.Write("src/main.go", "package main\n", 0o644)
	cp, err := st.Checkpoint(ctx, "before agent", snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	s0 := Capture(t, w.Dir)
	whole(t, st, "agent", func() { w.Write("src/main.go", "broken", 0o644); w.Write("junk", "j", 0o644) })
	w.Write("user.txt", "user's own, never touched by the agent", 0o644)
	whole(t, st, "agent 2", func() { w.Remove("src") })
	if _, err := st.Rollback(ctx, cp.ID, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	want := Tree{}
	for p, s := range s0 {
		want[p] = s
	}
	want["user.txt"] = State{Type: "file", Mode: 0o644, Data: "user's own, never touched by the agent"}
	RequireEqual(t, "after rollback to checkpoint", want, Capture(t, w.Dir))
}

// RunRandom applies `steps` random calls (seeded), saving the tree before
// each, then rolls back to every step in random order and compares, and
// checks that undoing one step reverts exactly that step.
func RunRandom(t *testing.T, open Opener, seed uint64, steps int) {
	ctx := context.Background()
	w, st := setup(t, open)
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	var saved []Tree
	var ids []string
	for i := 0; i < steps; i++ {
		saved = append(saved, Capture(t, w.Dir))
		n := 1 + r.IntN(4)
		var done []string
		e := whole(t, st, fmt.Sprintf("step %d", i), func() {
			for j := 0; j < n; j++ {
				done = append(done, RandomChange(r, w))
			}
		})
		ids = append(ids, e.ID)
	}
	final := Capture(t, w.Dir)

	// Undo of one step whose paths no later step touched reverts exactly it.
	for k := 0; k < 5; k++ {
		i := r.IntN(steps)
		e, err := st.Get(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Changes) == 0 {
			continue
		}
		cur := Capture(t, w.Dir)
		u, err := st.Undo(ctx, ids[i], false, snapshot.CallInfo{})
		if errors.Is(err, snapshot.ErrConflict) {
			continue
		}
		if err != nil {
			t.Fatalf("undo step %d: %v", i, err)
		}
		want := Tree{}
		for p, s := range cur {
			want[p] = s
		}
		for _, c := range e.Changes {
			if s, ok := saved[i][c.Path]; ok {
				want[c.Path] = s
			} else {
				delete(want, c.Path)
			}
		}
		RequireEqual(t, fmt.Sprintf("undo of step %d", i), want, Capture(t, w.Dir))
		if _, err := st.Undo(ctx, u.ID, false, snapshot.CallInfo{}); err != nil {
			t.Fatalf("redo step %d: %v", i, err)
		}
		RequireEqual(t, fmt.Sprintf("redo of step %d", i), cur, Capture(t, w.Dir))
	}
	RequireEqual(t, "after undo/redo pairs", final, Capture(t, w.Dir))

	order := r.Perm(steps)
	for _, i := range order {
		if _, err := st.Rollback(ctx, ids[i], snapshot.CallInfo{}); err != nil {
			t.Fatalf("rollback to step %d: %v", i, err)
		}
		RequireEqual(t, fmt.Sprintf("rollback to step %d (%s)", i, ids[i]), saved[i], Capture(t, w.Dir))
	}
}

var randNames = []string{"a", "b", "c", "d\nnl", "e\xff"}

func randPath(r *rand.Rand) string {
	depth := 1 + r.IntN(3)
	parts := make([]string, depth)
	for i := range parts {
		parts[i] = randNames[r.IntN(len(randNames))]
	}
	return strings.Join(parts, "/")
}

func randData(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		b := make([]byte, 200_000+r.IntN(100_000))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	default:
		return fmt.Sprintf("line %d\n", r.IntN(1000))
	}
}

// clearParents makes sure every parent of rel is a directory.
func clearParents(w W, rel string) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := filepath.Join(w.Dir, filepath.FromSlash(strings.Join(parts[:i], "/")))
		fi, err := os.Lstat(p)
		if err == nil && !fi.IsDir() {
			os.Remove(p)
		}
	}
	os.MkdirAll(filepath.Dir(filepath.Join(w.Dir, filepath.FromSlash(rel))), 0o755)
}

// RandomChange makes one random change to the workspace and describes it.
func RandomChange(r *rand.Rand, w W) string {
	rel := randPath(r)
	p := filepath.Join(w.Dir, filepath.FromSlash(rel))
	clearParents(w, rel)
	switch r.IntN(8) {
	case 0, 1, 2:
		os.RemoveAll(p)
		mode := []os.FileMode{0o644, 0o755, 0o600, 0o444}[r.IntN(4)]
		os.WriteFile(p, []byte(randData(r)), 0o600)
		os.Chmod(p, mode)
		return "write " + rel
	case 3:
		os.RemoveAll(p)
		return "remove " + rel
	case 4:
		os.RemoveAll(p)
		os.Mkdir(p, 0o755)
		os.Chmod(p, []os.FileMode{0o755, 0o700, 0o750}[r.IntN(3)])
		return "mkdir " + rel
	case 5:
		os.RemoveAll(p)
		os.Symlink([]string{"a", "../b", "/etc/passwd", "c/d", "../../.."}[r.IntN(5)], p)
		return "symlink " + rel
	case 6:
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			if fi.IsDir() {
				os.Chmod(p, []os.FileMode{0o755, 0o700}[r.IntN(2)])
			} else {
				os.Chmod(p, []os.FileMode{0o644, 0o755, 0o600}[r.IntN(3)])
			}
		}
		return "chmod " + rel
	default:
		to := randPath(r)
		if to == rel || strings.HasPrefix(to, rel+"/") || strings.HasPrefix(rel, to+"/") {
			return "noop"
		}
		if _, err := os.Lstat(p); err != nil {
			return "noop"
		}
		clearParents(w, to)
		dst := filepath.Join(w.Dir, filepath.FromSlash(to))
		os.RemoveAll(dst)
		os.Rename(p, dst)
		return "rename " + rel + " " + to
	}
}

// Paths lists a tree's paths, sorted (for messages).
func (tr Tree) Paths() []string {
	ps := make([]string, 0, len(tr))
	for p := range tr {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
