package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// journal is a store over a fresh workspace with a helper that runs fn as
// one whole-workspace call of session sess.
type journal struct {
	t   *testing.T
	ws  string
	st  *snapshot.Store
	ctx context.Context
}

func newJournal(t *testing.T) *journal {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.Open(context.Background(), filepath.Join(base, "state"), ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &journal{t: t, ws: ws, st: st, ctx: context.Background()}
}

func (j *journal) write(rel, content string) {
	j.t.Helper()
	p := filepath.Join(j.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		j.t.Fatal(err)
	}
}

func (j *journal) remove(rel string) {
	j.t.Helper()
	if err := os.Remove(filepath.Join(j.ws, rel)); err != nil {
		j.t.Fatal(err)
	}
}

func (j *journal) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(j.ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (j *journal) call(sess string, fn func()) string {
	j.t.Helper()
	c, err := j.st.Begin(j.ctx, snapshot.CallInfo{Session: sess, Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		j.t.Fatal(err)
	}
	fn()
	e, err := c.Finish(j.ctx)
	if err != nil {
		j.t.Fatal(err)
	}
	return e.ID
}

func opsOf(cs []snapshot.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, string(c.Op)+" "+c.Path)
	}
	return out
}

func TestNetChangesAndRanges(t *testing.T) {
	j := newJournal(t)
	j.write("keep.txt", "v0\n")
	j.write("gone.txt", "old\n")
	c1 := j.call("s1", func() { j.write("keep.txt", "v1\n"); j.write("tmp.txt", "x") })
	c2 := j.call("s2", func() { j.write("other.txt", "from s2\n") })
	cp, err := j.st.Checkpoint(j.ctx, "before the last calls", snapshot.CallInfo{Session: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	c3 := j.call("s1", func() { j.write("keep.txt", "v2\n"); j.remove("tmp.txt"); j.remove("gone.txt") })
	c4 := j.call("s2", func() { j.write("other.txt", "from s2 again\n") })

	cases := []struct {
		name    string
		r       snapshot.Range
		entries []string
		net     []string
		err     error
	}{
		{"since the first call", snapshot.Range{Since: c1}, []string{c1, c2, cp.ID, c3, c4},
			[]string{"deleted gone.txt", "modified keep.txt", "added other.txt"}, nil},
		{"since a call, abbreviated", snapshot.Range{Since: strings.TrimLeft(c3, "0")}, []string{c3, c4},
			[]string{"deleted gone.txt", "modified keep.txt", "modified other.txt", "deleted tmp.txt"}, nil},
		{"since a checkpoint leaves it out", snapshot.Range{Since: cp.ID}, []string{c3, c4},
			[]string{"deleted gone.txt", "modified keep.txt", "modified other.txt", "deleted tmp.txt"}, nil},
		{"since a session began", snapshot.Range{Since: "session:s2"}, []string{c2, cp.ID, c3, c4},
			[]string{"deleted gone.txt", "modified keep.txt", "added other.txt", "deleted tmp.txt"}, nil},
		{"one session only", snapshot.Range{Session: "s1"}, []string{c1, c3},
			[]string{"deleted gone.txt", "modified keep.txt"}, nil},
		{"one session since a call", snapshot.Range{Session: "s2", Since: c3}, []string{c4},
			[]string{"modified other.txt"}, nil},
		{"unknown session", snapshot.Range{Session: "nope"}, nil, nil, snapshot.ErrNotFound},
		{"unknown session start", snapshot.Range{Since: "session:nope"}, nil, nil, snapshot.ErrNotFound},
		{"unknown call", snapshot.Range{Since: "999"}, nil, nil, snapshot.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := j.st.Entries(j.ctx, tc.r)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range es {
				ids = append(ids, e.ID)
			}
			if !reflect.DeepEqual(ids, tc.entries) {
				t.Errorf("entries = %v, want %v", ids, tc.entries)
			}
			net := snapshot.NetChanges(es)
			if got := opsOf(net); !reflect.DeepEqual(got, tc.net) {
				t.Errorf("net changes = %v, want %v", got, tc.net)
			}
			var b strings.Builder
			if err := j.st.DiffChanges(j.ctx, net, &b); err != nil {
				t.Fatal(err)
			}
			for _, ch := range net {
				if !strings.Contains(b.String(), "a/"+ch.Path) {
					t.Errorf("diff does not mention %s:\n%s", ch.Path, b.String())
				}
			}
		})
	}
	// The combined diff goes from the first state to the last in one hunk.
	net := snapshot.NetChanges(mustEntries(t, j, snapshot.Range{Since: c1}))
	var b strings.Builder
	if err := j.st.DiffChanges(j.ctx, net, &b); err != nil {
		t.Fatal(err)
	}
	if d := b.String(); !strings.Contains(d, "-v0\n+v2\n") || strings.Contains(d, "v1") {
		t.Errorf("combined diff of keep.txt should go v0 -> v2 directly:\n%s", d)
	}
}

func mustEntries(t *testing.T, j *journal, r snapshot.Range) []snapshot.Entry {
	es, err := j.st.Entries(j.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestPlanUndoChangesNothing(t *testing.T) {
	j := newJournal(t)
	j.write("a.txt", "a0\n")
	j.write("b.txt", "b0\n")
	c1 := j.call("s", func() { j.write("a.txt", "a1\n"); j.write("b.txt", "b1\n"); j.write("new.txt", "n\n") })
	c2 := j.call("s", func() { j.write("b.txt", "b2\n") })

	before := len(mustEntries(t, j, snapshot.Range{}))
	p, err := j.st.PlanUndo(j.ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"modified a.txt", "modified b.txt", "deleted new.txt"}; !reflect.DeepEqual(opsOf(p.Changes), want) {
		t.Errorf("plan changes = %v, want %v", opsOf(p.Changes), want)
	}
	if len(p.Conflicts) != 1 || p.Conflicts[0].Path != "b.txt" || p.Conflicts[0].By != c2 {
		t.Errorf("conflicts = %+v, want b.txt by %s", p.Conflicts, c2)
	}
	if p.Kind != snapshot.KindUndo || p.Target != c1 || p.Blocked != "" {
		t.Errorf("plan = %+v", p)
	}
	if got := j.read("a.txt") + j.read("b.txt") + j.read("new.txt"); got != "a1\nb2\nn\n" {
		t.Errorf("a dry run changed the workspace: %q", got)
	}
	if after := len(mustEntries(t, j, snapshot.Range{})); after != before {
		t.Errorf("a dry run journaled something: %d entries, was %d", after, before)
	}
	// The real undo refuses with the same conflict; the editor-style
	// target ("") is the newest call.
	if _, err := j.st.Undo(j.ctx, c1, false, snapshot.CallInfo{}); !errors.Is(err, snapshot.ErrConflict) {
		t.Errorf("undo: %v, want a conflict", err)
	}
	p2, err := j.st.PlanUndo(j.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if p2.Target != c2 || len(p2.Conflicts) != 0 || !reflect.DeepEqual(opsOf(p2.Changes), []string{"modified b.txt"}) {
		t.Errorf("plan of undo \"\" = %+v", p2)
	}
	e, err := j.st.Undo(j.ctx, "", false, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(opsOf(e.Changes), opsOf(p2.Changes)) {
		t.Errorf("undo did %v, its plan said %v", opsOf(e.Changes), opsOf(p2.Changes))
	}
}

func TestPlanRollbackChangesNothing(t *testing.T) {
	j := newJournal(t)
	j.write("a.txt", "a0\n")
	c1 := j.call("s", func() { j.write("a.txt", "a1\n"); j.write("dir/new.txt", "n\n") })
	j.call("s", func() { j.write("b.txt", "b\n") })
	j.write("a.txt", "edited by hand\n") // outside any call

	p, err := j.st.PlanRollback(j.ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modified a.txt", "deleted b.txt", "deleted dir", "deleted dir/new.txt"}
	if !reflect.DeepEqual(opsOf(p.Changes), want) {
		t.Errorf("plan changes = %v, want %v", opsOf(p.Changes), want)
	}
	if len(p.Conflicts) != 1 || p.Conflicts[0].Path != "a.txt" || !strings.Contains(p.Conflicts[0].Reason, "outside") {
		t.Errorf("conflicts = %+v, want a.txt changed outside any call", p.Conflicts)
	}
	if got := j.read("a.txt") + j.read("b.txt") + j.read("dir/new.txt"); got != "edited by hand\nb\nn\n" {
		t.Errorf("a dry run changed the workspace: %q", got)
	}
	e, err := j.st.Rollback(j.ctx, c1, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(opsOf(e.Changes), want) {
		t.Errorf("rollback did %v, its plan said %v", opsOf(e.Changes), want)
	}
	if _, err := j.st.PlanRollback(j.ctx, "12345"); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("plan of an unknown call: %v, want not found", err)
	}
}
