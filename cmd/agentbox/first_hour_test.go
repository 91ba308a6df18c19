package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// journalCall runs fn as one whole-workspace call of session sess.
func journalCall(t *testing.T, st *snapshot.Store, sess, summary string, fn func()) snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: sess, Tool: "Bash", Summary: summary}, snapshot.Whole())
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

func put(t *testing.T, ws, rel, content string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiffLastAndRanges(t *testing.T) {
	ws, st := snapshotFixture(t)
	put(t, ws, "a.txt", "one\n")
	journalCall(t, st, "s1", "edit a", func() { put(t, ws, "a.txt", "two\n") })
	journalCall(t, st, "s2", "add b", func() { put(t, ws, "b.txt", "bee\n") })
	journalCall(t, st, "s1", "edit a again", func() { put(t, ws, "a.txt", "three\n") })

	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"no argument: the last call", []string{"diff"}, []string{"-two", "+three"}, []string{"bee", "+two"}},
		{"one call", []string{"diff", "2"}, []string{"+bee"}, []string{"three"}},
		{"since the first call: net per path", []string{"diff", "--since", "1"}, []string{"-one", "+three", "+bee"}, []string{"two"}},
		{"one session", []string{"diff", "--session", "s1"}, []string{"-one", "+three"}, []string{"bee", "two"}},
		{"since a session began", []string{"diff", "--since", "session:s2"}, []string{"+bee", "-two", "+three"}, []string{"one"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, append([]string{"--workspace", ws}, tc.args...)...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("%v: no %q in\n%s", tc.args, w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("%v: %q should not be in\n%s", tc.args, w, out)
				}
			}
		})
	}
	out, _, err := runCLI(t, "--workspace", ws, "--json", "diff", "--since", "session:s1")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []string
		Changes []historyChange
		Diff    string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if !reflect.DeepEqual(doc.Entries, []string{"000001", "000002", "000003"}) || len(doc.Changes) != 2 || !strings.Contains(doc.Diff, "+three") {
		t.Errorf("diff --json --since = %+v", doc)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "diff", "1", "--since", "1"); err == nil {
		t.Error("diff CALL --since: no error")
	}
	if _, _, err := runCLI(t, "--workspace", ws, "diff", "--session", "nobody"); err == nil {
		t.Error("diff --session of an unknown session: no error")
	}
}

func TestHistoryStatCollapsesBigTrees(t *testing.T) {
	ws, st := snapshotFixture(t)
	journalCall(t, st, "s", "npm install", func() {
		for i := 0; i < 2000; i++ {
			put(t, ws, fmt.Sprintf("node_modules/pkg/f%d.js", i), "x")
		}
		put(t, ws, "package.json", "{}")
	})
	journalCall(t, st, "s", "small", func() { put(t, ws, "one.txt", "1") })
	for _, args := range [][]string{{"history", "--stat"}, {"history"}} {
		out, _, err := runCLI(t, append([]string{"--workspace", ws}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) > 30 {
			t.Errorf("%v printed %d lines for 2 calls:\n%s", args, len(lines), strings.Join(lines[:30], "\n"))
		}
		if !strings.Contains(out, "A node_modules/pkg/ (2001 paths: 2001 added)") || !strings.Contains(out, "A one.txt") || !strings.Contains(out, "A package.json") {
			t.Errorf("%v:\n%s", args, out)
		}
		if len(args) > 1 && !strings.Contains(out, "2003 path(s): 2003 added") {
			t.Errorf("--stat has no totals:\n%s", out)
		}
	}
}

func TestGroupChanges(t *testing.T) {
	ch := func(paths ...string) []snapshot.Change {
		var out []snapshot.Change
		for _, p := range paths {
			out = append(out, snapshot.Change{Path: p, Op: snapshot.OpAdded})
		}
		return out
	}
	many := func(prefix string, n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("%s%03d", prefix, i))
		}
		return out
	}
	show := func(gs []statGroup) []string {
		var out []string
		for _, g := range gs {
			s := g.Path
			if g.Dir {
				s += "/"
			}
			out = append(out, fmt.Sprintf("%s:%d", s, g.Count))
		}
		return out
	}
	cases := []struct {
		name  string
		paths []string
		max   int
		want  []string
	}{
		{"fits", []string{"a", "b/c"}, 4, []string{"a:1", "b/c:1"}},
		{"one deep tree goes as deep as it can",
			append([]string{"vendor", "vendor/x", "vendor/x/y"}, many("vendor/x/y/f", 10)...), 4,
			[]string{"vendor:1", "vendor/x:1", "vendor/x/y/:11"}},
		{"two trees", append(many("a/", 5), many("b/c/", 5)...), 3, []string{"a/:5", "b/:5"}},
		{"second level when it fits", append(many("a/x/", 5), many("a/y/", 5)...), 3, []string{"a/x/:5", "a/y/:5"}},
		{"top level too wide: largest kept, rest folded", append(many("big/", 10), many("f", 6)...), 3, []string{"big/:10", "f000:1", ":5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := show(groupChanges(ch(tc.paths...), tc.max))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUndoRollbackDryRun(t *testing.T) {
	ws, st := snapshotFixture(t)
	put(t, ws, "a.txt", "a0\n")
	e1 := journalCall(t, st, "s", "edit a", func() { put(t, ws, "a.txt", "a1\n"); put(t, ws, "new.txt", "n\n") })
	journalCall(t, st, "s", "edit a again", func() { put(t, ws, "a.txt", "a2\n") })
	state := func() string {
		a, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
		n, _ := os.ReadFile(filepath.Join(ws, "new.txt"))
		entries, _ := st.List(context.Background(), 0)
		return fmt.Sprintf("%q %q %d", a, n, len(entries))
	}
	before := state()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"undo", "--dry-run", e1.ID}, []string{"dry run: undo 000001 would restore 2 path(s)", "M a.txt", "D new.txt",
			"1 conflict(s):", "a.txt: modified since (by call 000002)", "it would stop at the conflicts"}},
		{[]string{"undo", "-n"}, []string{"dry run: undo 000002 would restore 1 path(s)", "M a.txt"}},
		{[]string{"rollback", "--dry-run", "--to", e1.ID}, []string{"dry run: rollback to just before 000001 would restore 2 path(s)", "M a.txt", "D new.txt"}},
	}
	for _, tc := range cases {
		out, errOut, err := runCLI(t, append([]string{"--workspace", ws}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v %s", tc.args, err, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
		if strings.Contains(out, "would stop") && tc.args[1] == "-n" {
			t.Errorf("%v: a plan without conflicts would not stop:\n%s", tc.args, out)
		}
		if got := state(); got != before {
			t.Fatalf("%v changed something: %s, was %s", tc.args, got, before)
		}
	}
	out, _, err := runCLI(t, "--workspace", ws, "--json", "undo", "--dry-run", "1")
	if err != nil {
		t.Fatal(err)
	}
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if !p.DryRun || p.WouldRun || p.Target != "000001" || len(p.Changes) != 2 || len(p.Conflicts) != 1 || p.Conflicts[0].By != "000002" {
		t.Errorf("undo --dry-run --json = %+v", p)
	}
	if got := state(); got != before {
		t.Fatalf("--json dry run changed something: %s", got)
	}
	// Nothing a dry run does reaches the audit log.
	if out, _, _ := runCLI(t, "--workspace", ws, "--json", "audit"); strings.TrimSpace(out) != "[]" {
		t.Errorf("audit after dry runs: %s", out)
	}
}

// TestSnapshotCommandsAudited: undo, rollback and checkpoint each leave one
// audit record, failures included, and `agentbox audit` shows what each
// was about.
func TestSnapshotCommandsAudited(t *testing.T) {
	ws, st := snapshotFixture(t)
	put(t, ws, "a.txt", "a0\n")
	e1 := journalCall(t, st, "s", "edit a", func() { put(t, ws, "a.txt", "a1\n") })
	steps := [][]string{
		{"checkpoint", "-m", "before undo"},
		{"undo"},
		{"rollback", "--to", e1.ID},
		{"undo", "424242"}, // fails: no such call
	}
	for _, args := range steps {
		runCLI(t, append([]string{"--workspace", ws}, args...)...)
	}
	out, _, err := runCLI(t, "--workspace", ws, "--json", "audit")
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Tool, Session, Decision string
		JournalID               string `json:"journal_id"`
		ErrorKind               string `json:"error_kind"`
		Input                   map[string]any
		Changed                 []string
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	type rec struct{ tool, journal, errKind, input string }
	var got []rec
	for _, r := range recs {
		in, _ := json.Marshal(r.Input)
		if r.Session != "cli" || r.Decision != "allow" {
			t.Errorf("record %+v: want session cli, decision allow", r)
		}
		got = append(got, rec{r.Tool, r.JournalID, r.ErrorKind, string(in)})
	}
	want := []rec{
		{"checkpoint", "000002", "", `{"message":"before undo"}`},
		{"undo", "000003", "", `{"call":"","force":false}`},
		{"rollback", "000004", "", `{"to":"000001"}`},
		{"undo", "", "not_found", `{"call":"424242","force":false}`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("audit records\n got %+v\nwant %+v", got, want)
	}
	if len(recs) == 4 && !reflect.DeepEqual(recs[1].Changed, []string{"a.txt"}) {
		t.Errorf("undo record changed = %v, want [a.txt]", recs[1].Changed)
	}
	table, _, err := runCLI(t, "--workspace", ws, "audit")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"COMMAND", "before undo", "to 000001", "call 424242"} {
		if !strings.Contains(table, w) {
			t.Errorf("audit table has no %q:\n%s", w, table)
		}
	}
	if _, _, err := runCLI(t, "--workspace", ws, "audit", "verify"); err != nil {
		t.Errorf("audit verify: %v", err)
	}
}
