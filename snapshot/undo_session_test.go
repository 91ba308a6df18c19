package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// TestUndoLastOfSession: Undo without an id and with a session reverts
// that session's newest call, chosen under the store's lock, never a newer
// call of another session; a session with none left is ErrNotFound.
func TestUndoLastOfSession(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := func(session, name string) string {
		p := filepath.Join(ws, name)
		c, err := st.Begin(ctx, snapshot.CallInfo{Session: session, Tool: "Write"}, snapshot.File(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(session), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := c.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	a := write("a", "a.txt")
	write("b", "b.txt") // newer, another session's
	u, err := st.Undo(ctx, "", false, snapshot.CallInfo{Session: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Reverts != a {
		t.Errorf("undo of session a reverted %s, want %s (a's call)", u.Reverts, a)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
		t.Errorf("session b's file: %v", err)
	}
	if _, err := st.Undo(ctx, "", false, snapshot.CallInfo{Session: "a"}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("session a has nothing left: %v, want ErrNotFound", err)
	}
}
