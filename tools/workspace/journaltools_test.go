package workspace

import (
	"context"
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

	j := &Snapshots{store: st}
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
