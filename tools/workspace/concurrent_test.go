package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

// gatedShell is a Bash command that blocks until another session creates
// the file gate.
const gatedShell = `touch started; while [ ! -e gate ]; do sleep 0.02; done; echo shell > from_shell.txt`

// openShared opens one workspace's tools with the shared fake runner and
// returns a runner of calls for a session.
func openShared(t *testing.T, serial bool) (*Tools, func(ctx context.Context, session, tool, in string) tools.Response) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Tools.Mode = "bypassPermissions"
	cfg.Snapshot.SerialCalls = serial
	if err := os.WriteFile(filepath.Join(cfg.Workspace, "other.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fake := sandboxtest.NewFake(cfg.Workspace)
	sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(ctx); fake.Close(ctx) })
	sessions := map[string]*tools.Session{}
	for _, id := range []string{"a", "b"} {
		if sessions[id], err = sys.Sessions.Load(id); err != nil {
			t.Fatal(err)
		}
	}
	return sys, func(ctx context.Context, session, tool, in string) tools.Response {
		return sys.Pipeline.Run(ctx, tools.Request{Session: sessions[session], Tool: tool, Input: json.RawMessage(in)})
	}
}

// While one session's shell command runs (blocked until the other session
// writes its gate file), the other session's Write, Edit and Read complete;
// each call's journal entry holds only its own change, and undoing one
// never reverts the other. If the Write waited for the shell command,
// neither would ever finish: the Write's deadline fails the test.
func TestWriteDoesNotWaitForShell(t *testing.T) {
	sys, run := openShared(t, false)
	ws := sys.Config.Workspace
	ctx := context.Background()
	shell := startShell(t, ws, run)
	waitFile(t, filepath.Join(ws, "started"))

	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, c := range []struct{ tool, in string }{
		{"Read", `{"file_path":"other.txt"}`},
		{"Edit", `{"file_path":"other.txt","old_string":"one","new_string":"two"}`},
		{"Write", `{"file_path":"gate","content":"open\n"}`},
	} {
		if r := run(bctx, "b", c.tool, c.in); r.Err != nil {
			t.Fatalf("%s while a shell command runs: %s: %s", c.tool, r.Err.Kind, r.Err.Message)
		}
	}
	var a tools.Response
	select {
	case a = <-shell:
	case <-time.After(30 * time.Second):
		t.Fatal("the shell command never ended")
	}
	if a.Err != nil {
		t.Fatalf("Bash: %s: %s", a.Err.Kind, a.Err.Message)
	}
	st, err := snapshot.OpenConfig(ctx, sys.Config)
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string]snapshot.Entry{}
	for _, e := range all {
		byTool[e.Tool] = e
	}
	if got := paths(byTool["Bash"]); got != "from_shell.txt,started" {
		t.Fatalf("Bash entry %q, want from_shell.txt,started (not gate, not other.txt)", got)
	}
	if got := paths(byTool["Write"]); got != "gate" {
		t.Fatalf("Write entry %q, want gate", got)
	}
	if got := paths(byTool["Edit"]); got != "other.txt" {
		t.Fatalf("Edit entry %q, want other.txt", got)
	}
	// The shell entry sorts after the calls journaled while it ran.
	if ids := []string{byTool["Edit"].ID, byTool["Write"].ID, byTool["Bash"].ID}; !slices.IsSorted(ids) {
		t.Fatalf("entry order %v, want Edit < Write < Bash", ids)
	}
	// Undo of the shell call removes its files and leaves the Write's and
	// the Edit's; undo of the Write removes only gate.
	if _, err := st.Undo(ctx, byTool["Bash"].ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"from_shell.txt": "", "started": "", "gate": "open\n", "other.txt": "two\n"} {
		if got := readOr(ws, p); got != want {
			t.Fatalf("after undo of Bash: %s = %q, want %q", p, got, want)
		}
	}
	if _, err := st.Undo(ctx, byTool["Write"].ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := readOr(ws, "gate"); got != "" {
		t.Fatalf("after undo of Write: gate = %q", got)
	}
	if got := readOr(ws, "other.txt"); got != "two\n" {
		t.Fatalf("after undo of Write: other.txt = %q", got)
	}
}

// With snapshot.serial_calls a shell command holds the snapshot lock for
// its whole run: the Write waits (here until its deadline).
func TestWriteWaitsForShellWhenSerial(t *testing.T) {
	sys, run := openShared(t, true)
	ws := sys.Config.Workspace
	ctx := context.Background()
	shell := startShell(t, ws, run)
	waitFile(t, filepath.Join(ws, "started"))
	bctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	r := run(bctx, "b", "Write", `{"file_path":"new.txt","content":"x\n"}`)
	if r.Err == nil || r.Err.Kind != tools.ErrTimeout {
		t.Fatalf("Write during a serial shell call: %+v, want a timeout", r.Err)
	}
	// A Read never waits.
	if r := run(ctx, "b", "Read", `{"file_path":"other.txt"}`); r.Err != nil {
		t.Fatalf("Read: %+v", r.Err)
	}
	if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a := <-shell; a.Err != nil {
		t.Fatalf("Bash: %+v", a.Err)
	}
}

// startShell runs gatedShell as session a's Bash call; its result comes
// on the channel. The test's cleanup opens the gate and waits for it.
func startShell(t *testing.T, ws string, run func(ctx context.Context, session, tool, in string) tools.Response) <-chan tools.Response {
	shell := make(chan tools.Response, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shell <- run(sctx, "a", "Bash", `{"command":"`+gatedShell+`"}`)
	}()
	t.Cleanup(func() {
		if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o644); err != nil {
			t.Error(err) // the shell then ends at its timeout
		}
		<-done
	})
	return shell
}

func readOr(ws, rel string) string {
	b, err := os.ReadFile(filepath.Join(ws, rel))
	if err != nil {
		return ""
	}
	return strings.Clone(string(b))
}
