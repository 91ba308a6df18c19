package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
)

// runCLI runs agentbox with args and returns stdout, stderr and the error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func snapshotFixture(t *testing.T) (ws string, st *snapshot.Store) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(base, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	cfg, err := config.Load(config.LoadOptions{Getenv: func(k string) string {
		if k == "AGENTBOX_WORKSPACE" {
			return ws
		}
		return os.Getenv(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	st, err = snapshot.OpenConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ws, st
}

func TestSnapshotCommands(t *testing.T) {
	ws, st := snapshotFixture(t)
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: "s1", Tool: "Bash", Summary: "echo hi > a.txt"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi\n"), 0o644))
	e1, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// history --json: exactly the contract's keys, newest first.
	out, _, err := runCLI(t, "--workspace", ws, "history", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var hist []map[string]any
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("history --json: %v\n%s", err, out)
	}
	if len(hist) != 1 {
		t.Fatalf("history: %v", hist)
	}
	var keys []string
	for k := range hist[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"changes", "id", "session", "summary", "time", "tool"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("history keys %v, want %v", keys, want)
	}
	if ch := hist[0]["changes"].([]any); len(ch) != 1 || !reflect.DeepEqual(ch[0], map[string]any{"path": "a.txt", "op": "added"}) {
		t.Fatalf("changes %v", ch)
	}

	// diff
	out, _, err = runCLI(t, "--workspace", ws, "diff", strings.TrimLeft(e1.ID, "0"))
	if err != nil || !strings.Contains(out, "+hi") {
		t.Fatalf("diff: %v\n%s", err, out)
	}

	// checkpoint, undo, history shows them, rollback.
	out, _, err = runCLI(t, "--workspace", ws, "checkpoint", "-m", "mark", "--json")
	if err != nil || !strings.Contains(out, `"tool": "checkpoint"`) {
		t.Fatalf("checkpoint: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "--workspace", ws, "undo")
	if err != nil || !strings.Contains(out, "undid "+e1.ID) {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("undo left a.txt")
	}
	out, _, err = runCLI(t, "--workspace", ws, "history", "--limit", "1")
	if err != nil || !strings.Contains(out, "undoes "+e1.ID) {
		t.Fatalf("history: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "rollback", "--to", e1.ID); err != nil {
		t.Fatalf("rollback: %v", err)
	}

	// Conflicts: stderr, non-zero exit, JSON on stdout with --json.
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("user\n"), 0o644))
	out, errOut, err := runCLI(t, "--workspace", ws, "--json", "undo", e1.ID)
	var ec exitCode
	if err == nil || !errorsAs(err, &ec) || ec != 1 || !strings.Contains(errOut, "a.txt") || !strings.Contains(out, `"conflicts"`) {
		t.Fatalf("conflicting undo: err=%v stdout=%s stderr=%s", err, out, errOut)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "undo", e1.ID, "--force"); err != nil {
		t.Fatalf("forced undo: %v", err)
	}
	// Unknown call: an error.
	if _, _, err := runCLI(t, "--workspace", ws, "diff", "9999"); err == nil {
		t.Fatal("diff of an unknown call succeeded")
	}
	out, _, err = runCLI(t, "--workspace", ws, "snapshots", "gc", "--keep-calls", "2", "--json")
	if err != nil || !strings.Contains(out, `"entries_kept": 2`) {
		t.Fatalf("gc: %v\n%s", err, out)
	}
}

func errorsAs(err error, target *exitCode) bool {
	e, ok := err.(exitCode)
	if ok {
		*target = e
	}
	return ok
}
