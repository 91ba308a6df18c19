package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/mcp"
)

// TestHistoryAndUndo drives the optional MCP tools against a real
// snapshot store through Snapshots: a journaled change is listed by
// History and reverted by Undo; a second Undo finds nothing left.
func TestHistoryAndUndo(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.Begin(ctx, snapshot.CallInfo{Session: "s1", Tool: "Write", Summary: "a.txt"}, snapshot.File(file))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := call.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Workspace: ws, Session: tools.NewSession("s1", ws)}

	j := &Snapshots{}
	j.opened.Store(st)
	hist := mcp.HistoryTool(j)
	res, err := hist.Run(ctx, env, &mcp.HistoryParams{})
	if err != nil || res.IsError() {
		t.Fatalf("History: %v %+v", err, res)
	}
	for _, want := range []string{e.ID, "Write", "modified a.txt", "[this session]"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("History lacks %q:\n%s", want, res.Content)
		}
	}

	undo := mcp.UndoTool(j)
	res, err = undo.Run(ctx, env, &mcp.UndoParams{})
	if err != nil || res.IsError() {
		t.Fatalf("Undo: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(file); string(b) != "one\n" {
		t.Errorf("after undo a.txt = %q, want the original", b)
	}
	if res.Meta["reverted"] != e.ID {
		t.Errorf("meta = %v", res.Meta)
	}
	res, err = hist.Run(ctx, env, &mcp.HistoryParams{SessionOnly: true})
	if err != nil || !strings.Contains(res.Content, "[undone by") {
		t.Errorf("History after undo: %v\n%s", err, res.Content)
	}

	// The undo can be undone (redo), but an unknown id is not found.
	res, err = undo.Run(ctx, env, &mcp.UndoParams{CallID: "999"})
	if err != nil || res.Err == nil || res.Err.Kind != tools.ErrNotFound {
		t.Errorf("Undo 999: %v %+v", err, res)
	}
}

// TestSnapshotsJournal: `agentbox exec`'s path through the workspace's
// store. A command that acted is journaled with its changes; one that
// never ran (act reports false) leaves no entry.
func TestSnapshotsJournal(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	snaps := NewSnapshots(cfg, nil)
	defer snaps.Close()
	info := tools.SnapshotInfo{Session: "cli", Tool: "exec", Summary: "touch b.txt"}
	e, err := snaps.Journal(ctx, info, func(context.Context) bool {
		return os.WriteFile(filepath.Join(cfg.Workspace, "b.txt"), []byte("b\n"), 0o644) == nil
	})
	if err != nil || e == nil || len(e.Changes) != 1 || e.Changes[0].Path != "b.txt" || e.Changes[0].Op != "added" {
		t.Fatalf("journaled %+v, %v; want b.txt added", e, err)
	}
	if e.Tool != "exec" || e.Session != "cli" || e.Kind != tools.EntryCall {
		t.Errorf("entry %+v lacks who made it", e)
	}
	e, err = snaps.Journal(ctx, info, func(context.Context) bool { return false })
	if err != nil || e != nil {
		t.Fatalf("a command that never ran was journaled: %+v, %v", e, err)
	}
	list, err := snaps.List(ctx, 0)
	if err != nil || len(list) != 1 {
		t.Fatalf("journal %+v, %v; want one entry", list, err)
	}
}

// TestUndoErrors: the store's undo errors reach the tools as their own.
func TestUndoErrors(t *testing.T) {
	ce := &snapshot.ConflictError{ID: "000003", Conflicts: []snapshot.Conflict{{Path: "a.txt", Reason: "modified since", By: "000004"}}}
	var uc *tools.UndoConflictError
	if err := undoError(fmt.Errorf("wrapped: %w", ce)); !errors.As(err, &uc) || uc.ID != "000003" || len(uc.Conflicts) != 1 || uc.Conflicts[0].By != "000004" {
		t.Errorf("conflict became %v", err)
	}
	if err := undoError(fmt.Errorf("snapshot: nothing to undo: %w", snapshot.ErrNotFound)); !errors.Is(err, tools.ErrNoEntry) {
		t.Errorf("not found became %v", err)
	}
	err := undoError(errors.New("snapshot: call 000002 changed nothing; nothing to undo"))
	if !errors.Is(err, tools.ErrNothingToUndo) || err.Error() != "call 000002 changed nothing; nothing to undo" {
		t.Errorf("nothing to undo became %q", err)
	}
}

// TestUndoIsSessionScoped: an agent's Undo without an id reverts its own
// session's newest call, never a newer one of another session; with
// nothing of its own left it says so and changes nothing.
func TestUndoIsSessionScoped(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	write := func(session, name string) snapshot.Entry {
		p := filepath.Join(ws, name)
		c, err := st.Begin(ctx, snapshot.CallInfo{Session: session, Tool: "Write", Summary: "Write " + name}, snapshot.File(p))
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.WriteFile(p, []byte(session+"\n"), 0o644))
		e, err := c.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mine := write("s1", "mine.txt")
	write("s2", "theirs.txt")
	j := &Snapshots{}
	j.opened.Store(st)
	undo := mcp.UndoTool(j)
	env := &tools.Env{Workspace: ws, Session: tools.NewSession("s1", ws)}
	res, err := undo.Run(ctx, env, &mcp.UndoParams{})
	if err != nil || res.IsError() || res.Meta["reverted"] != mine.ID {
		t.Fatalf("Undo in s1: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(ws, "theirs.txt")); err != nil {
		t.Fatal("s1's Undo reverted s2's call")
	}
	if _, err := os.Stat(filepath.Join(ws, "mine.txt")); err == nil {
		t.Fatal("s1's call was not undone")
	}
	res, err = undo.Run(ctx, env, &mcp.UndoParams{})
	if err != nil || res.Err == nil || !strings.Contains(res.Content, "this session has no call left to undo") {
		t.Fatalf("second Undo in s1: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(ws, "theirs.txt")); err != nil {
		t.Fatal("s1's second Undo reverted s2's call")
	}
}
