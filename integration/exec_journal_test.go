//go:build integration

package integration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecJournaled checks that `agentbox exec` records what the command
// changed as one journal entry that `agentbox undo` reverts exactly, also
// when the command fails or times out.
func TestExecJournaled(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		o, e, code := agentboxIn(t, ws, state, nil, args...)
		if code != 0 {
			return o + e, code
		}
		return o, 0
	}
	keep := filepath.Join(ws, "keep.txt")
	if err := os.WriteFile(keep, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(keep, wsUID, wsGID); err != nil {
		t.Fatal(err)
	}
	if out, code := run("exec", "--", "echo changed > keep.txt; echo new > new.txt; exit 4"); code != 4 {
		t.Fatalf("exec: code %d: %s", code, out)
	}
	if out, code := run("exec", "--timeout", "2s", "--", "echo late > late.txt; sleep 60"); code != 137 {
		t.Fatalf("exec with timeout: code %d: %s", code, out)
	}
	out, code := run("history", "--json")
	if code != 0 {
		t.Fatalf("history: code %d: %s", code, out)
	}
	var hist []struct {
		ID      string `json:"id"`
		Tool    string `json:"tool"`
		Session string `json:"session"`
		Changes []struct{ Path, Op string }
	}
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("history --json: %v in %q", err, out)
	}
	if len(hist) != 2 || hist[0].Tool != "exec" || hist[1].Tool != "exec" || hist[1].Session != "cli" {
		t.Fatalf("history = %+v, want two exec calls", hist)
	}
	if len(hist[0].Changes) != 1 || hist[0].Changes[0].Path != "late.txt" || hist[0].Changes[0].Op != "added" {
		t.Errorf("timed-out call's changes = %+v, want late.txt added", hist[0].Changes)
	}
	want := map[string]string{"keep.txt": "modified", "new.txt": "added"}
	if len(hist[1].Changes) != len(want) {
		t.Errorf("first call's changes = %+v, want %v", hist[1].Changes, want)
	}
	for _, c := range hist[1].Changes {
		if want[c.Path] != c.Op {
			t.Errorf("change %s %s, want %v", c.Path, c.Op, want)
		}
	}
	// Undo both, newest first; the workspace is back to the original.
	for range 2 {
		if out, code := run("undo"); code != 0 {
			t.Fatalf("undo: code %d: %s", code, out)
		}
	}
	got, err := os.ReadFile(filepath.Join(ws, "keep.txt"))
	if err != nil || string(got) != "original\n" {
		t.Errorf("keep.txt after undo = %q, %v", got, err)
	}
	for _, name := range []string{"new.txt", "late.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after undo (%v)", name, err)
		}
	}
}

// TestExecAudited: `agentbox exec` leaves an audit record with the
// command, its exit code, container and journal entry, and `agentbox
// audit` shows the command.
func TestExecAudited(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		o, e, code := agentboxIn(t, ws, state, nil, args...)
		return o + e, code
	}
	if out, code := run("exec", "--", "echo audited > audited.txt; exit 3"); code != 3 {
		t.Fatalf("exec: code %d: %s", code, out)
	}
	out, code := run("--json", "audit")
	if code != 0 {
		t.Fatalf("audit: %d %s", code, out)
	}
	var recs []struct {
		Tool        string
		Input       struct{ Command string }
		ExitCode    *int     `json:"exit_code"`
		JournalID   string   `json:"journal_id"`
		ContainerID string   `json:"container_id"`
		Changed     []string `json:"changed"`
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(recs) != 1 {
		t.Fatalf("audit records: %s", out)
	}
	r := recs[0]
	if r.Tool != "exec" || r.Input.Command != "echo audited > audited.txt; exit 3" || r.ExitCode == nil || *r.ExitCode != 3 ||
		r.JournalID != "000001" || r.ContainerID == "" || len(r.Changed) != 1 || r.Changed[0] != "audited.txt" {
		t.Errorf("exec record: %s", out)
	}
	if table, _ := run("audit"); !strings.Contains(table, "echo audited > audited.txt; exit 3") {
		t.Errorf("audit table does not show the command:\n%s", table)
	}
}
