package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// journalWrite journals a write of name by session, as a tool call would.
func journalWrite(t *testing.T, st *snapshot.Store, ws, session, tool, summary, name, content string) snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Session: session, Tool: tool, Summary: summary}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHistoryMarksUndone: `history` says which calls were undone, and by
// which entry (in text and as undone_by in --json); a redo clears it.
func TestHistoryMarksUndone(t *testing.T) {
	ws, st := snapshotFixture(t)
	e1 := journalWrite(t, st, ws, "s1", "Bash", "Bash: echo hi > a.txt", "a.txt", "hi\n")
	_, _, err := runCLI(t, "--workspace", ws, "undo", e1.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "--workspace", ws, "history")
	if err != nil {
		t.Fatal(err)
	}
	var undoID string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "[undoes "+e1.ID+"]") {
			undoID = strings.Fields(l)[0]
		}
	}
	if undoID == "" || !strings.Contains(out, "[undone by "+undoID+"]") {
		t.Fatalf("history does not mark %s undone:\n%s", e1.ID, out)
	}
	out, _, _ = runCLI(t, "--workspace", ws, "history", "--json")
	var hist []historyEntry
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatal(err)
	}
	if hist[len(hist)-1].UndoneBy != undoID {
		t.Fatalf("history --json: %+v", hist)
	}
	// Undo the undo (a redo): e1 counts again.
	if _, _, err := runCLI(t, "--workspace", ws, "undo", undoID); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(t, "--workspace", ws, "history")
	if strings.Contains(out, "[undone by "+undoID+"]") {
		t.Fatalf("after the redo:\n%s", out)
	}
}

// TestDiffNamesTheCallOnce: `diff` without CALL names the call's tool once.
func TestDiffNamesTheCallOnce(t *testing.T) {
	ws, st := snapshotFixture(t)
	journalWrite(t, st, ws, "s1", "Bash", "Bash: echo hi > a.txt", "a.txt", "hi\n")
	_, stderr, err := runCLI(t, "--workspace", ws, "diff")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "Bash: Bash:") || !strings.Contains(stderr, "(Bash: echo hi > a.txt)") {
		t.Fatalf("diff says %q", stderr)
	}
}

// TestUndoLastAcrossSessions: `undo` without CALL reverts the newest call
// when one session is at work; when the newest calls of two sessions are
// close in time it changes nothing and names both; --session picks one.
func TestUndoLastAcrossSessions(t *testing.T) {
	ws, st := snapshotFixture(t)
	a := journalWrite(t, st, ws, "mcp-a", "Write", "Write a.txt", "a.txt", "a\n")
	b := journalWrite(t, st, ws, "mcp-b", "Write", "Write b.txt", "b.txt", "b\n")
	_, stderr, err := runCLI(t, "--workspace", ws, "undo")
	if err == nil || !strings.Contains(err.Error(), "two sessions") || !strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), b.ID) {
		t.Fatalf("undo with two sessions at work: %v %s", err, stderr)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Fatalf("the refused undo removed %s", f)
		}
	}
	out, _, err := runCLI(t, "--workspace", ws, "undo", "--session", "mcp-a")
	if err != nil || !strings.Contains(out, "undid "+a.ID) {
		t.Fatalf("undo --session mcp-a: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal("undo --session mcp-a touched mcp-b's file")
	}
	// Only mcp-b's call is left undoable: the last call is clear again.
	out, _, err = runCLI(t, "--workspace", ws, "undo")
	if err != nil || !strings.Contains(out, "undid "+b.ID) {
		t.Fatalf("undo: %v\n%s", err, out)
	}
}

// The command `undo` suggests when two sessions are at work can be run as
// printed: the session is quoted for the shell, and a call of no session
// (which --session cannot select) is suggested by its id alone.
func TestUndoLastSuggestsRunnableCommand(t *testing.T) {
	ws, st := snapshotFixture(t)
	journalWrite(t, st, ws, "mcp-a", "Write", "Write a.txt", "a.txt", "a\n")
	journalWrite(t, st, ws, "my session;true", "Write", "Write b.txt", "b.txt", "b\n")
	_, _, err := runCLI(t, "--workspace", ws, "undo")
	if err == nil || !strings.Contains(err.Error(), "`agentbox undo --session 'my session;true'`") {
		t.Fatalf("undo with two sessions at work: %v", err)
	}
	journalWrite(t, st, ws, "", "Write", "Write c.txt", "c.txt", "c\n")
	_, _, err = runCLI(t, "--workspace", ws, "undo")
	if err == nil || !strings.Contains(err.Error(), "two sessions") || strings.Contains(err.Error(), "--session") {
		t.Fatalf("undo with a call of no session last: %v", err)
	}
}
