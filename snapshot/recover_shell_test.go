package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A whole-workspace call whose process died is completed by recovery only
// while no shell command runs (its scan would take that command's writes
// for the dead call's): a file call's lock leaves it pending while the
// shell lock is held elsewhere, and completes it once it is free.
func TestRecoverWaitsForShell(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	st, err := Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := st.Begin(ctx, CallInfo{Tool: "Bash", Summary: "dies"}, Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "dead.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its process dies: the live flock and the shell lock go with it.
	dead.shell.release()
	dead.unshell()
	pendingID := dead.ID()

	// Another process's shell command runs.
	unshell, err := st.lockShell(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "running.txt"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	fc, err := st.Begin(ctx, CallInfo{Tool: "Write"}, File("w.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.readPending(pendingID); err != nil {
		t.Fatalf("the dead call was completed while a shell command ran: %v", err)
	}
	if err := fc.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(ws, "running.txt"))) // the running command cleans up
	unshell()

	fc, err = st.Begin(ctx, CallInfo{Tool: "Write"}, File("w.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fc.Abort(ctx)
	if _, err := st.readPending(pendingID); err == nil {
		t.Fatal("the dead call is still pending with no shell command running")
	}
	es, err := st.List(ctx, 0)
	if err != nil || len(es) != 1 {
		t.Fatalf("journal %v, %v; want the dead call's entry", es, err)
	}
	if e := es[0]; !e.Interrupted || len(e.Changes) != 1 || e.Changes[0].Path != "dead.txt" {
		t.Fatalf("entry %+v; want dead.txt, interrupted", e)
	}
}
