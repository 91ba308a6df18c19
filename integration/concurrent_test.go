//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// TestNoSessionWaitsOnAnothersShell: session A's Bash command, in a real
// container, waits for a file that session B's Write creates, while B also
// reads and edits another file. If B's calls waited for A's command (the
// snapshot lock held for its whole run) neither would ever finish: B's
// deadline fails the test cleanly. Then each journal entry holds only its
// own call's change, and undoing one never reverts the other.
func TestNoSessionWaitsOnAnothersShell(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, cfg, sys, sessA, sessB := hostSessions(t, ctx, func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
		return tools.Approval{Allow: true, By: "test"}, nil
	})
	call := func(ctx context.Context, s *tools.Session, tool, input string) tools.Response {
		return sys.Pipeline.Run(ctx, tools.Request{Session: s, Tool: tool, Input: json.RawMessage(input)})
	}
	must := func(what string, r tools.Response) {
		t.Helper()
		if r.Err != nil {
			t.Fatalf("%s: %s: %s\n%s", what, r.Err.Kind, r.Err.Message, r.Content)
		}
	}
	must("Write other.txt", call(ctx, sessB, "Write", `{"file_path":"other.txt","content":"one\n"}`))

	shell := make(chan tools.Response, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		shell <- call(ctx, sessA, "Bash", `{"command":"touch started; while [ ! -e gate ]; do sleep 0.05; done; echo shell > from_shell.txt"}`)
	}()
	defer func() {
		// Never leave the command waiting, whatever failed.
		os.WriteFile(filepath.Join(ws, "gate"), nil, 0o644)
		<-done
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Lstat(filepath.Join(ws, "started")); err == nil {
			break
		}
		select {
		case r := <-shell:
			t.Fatalf("the shell command ended before its gate opened: %+v", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}

	bctx, bcancel := context.WithTimeout(ctx, 60*time.Second)
	defer bcancel()
	start := time.Now()
	must("Read while the shell runs", call(bctx, sessB, "Read", `{"file_path":"other.txt"}`))
	must("Edit while the shell runs", call(bctx, sessB, "Edit", `{"file_path":"other.txt","old_string":"one","new_string":"two"}`))
	must("Write gate while the shell runs", call(bctx, sessB, "Write", `{"file_path":"gate","content":"open\n"}`))
	t.Logf("Read, Edit and Write while another session's command ran: %v", time.Since(start))
	var a tools.Response
	select {
	case a = <-shell:
	case <-time.After(90 * time.Second):
		t.Fatal("the shell command did not end after its gate opened")
	}
	must("Bash", a)

	st, err := snapshot.OpenConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var bash, write, edit snapshot.Entry
	for _, e := range all {
		switch {
		case e.Tool == "Bash":
			bash = e
		case e.Tool == "Write" && strings.Contains(e.Summary, "gate"):
			write = e
		case e.Tool == "Edit":
			edit = e
		}
	}
	changed := func(e snapshot.Entry) string {
		var ps []string
		for _, c := range e.Changes {
			ps = append(ps, c.Path)
		}
		return strings.Join(ps, ",")
	}
	if got := changed(bash); got != "from_shell.txt,started" {
		t.Fatalf("Bash entry %s: %q, want from_shell.txt,started (not gate, not other.txt)", bash.ID, got)
	}
	if got := changed(write); got != "gate" {
		t.Fatalf("Write entry %s: %q, want gate", write.ID, got)
	}
	if got := changed(edit); got != "other.txt" {
		t.Fatalf("Edit entry %s: %q, want other.txt", edit.ID, got)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	// Undo of the shell call takes its files away and leaves B's.
	if _, err := st.Undo(ctx, bash.ID, false, snapshot.CallInfo{Session: "cli"}); err != nil {
		t.Fatalf("undo %s: %v", bash.ID, err)
	}
	for rel, want := range map[string]string{"from_shell.txt": "<absent>", "started": "<absent>", "gate": "open\n", "other.txt": "two\n"} {
		if got := read(rel); got != want {
			t.Fatalf("after undo of the Bash call: %s = %q, want %q", rel, got, want)
		}
	}
	// Undo of B's Write takes gate away and nothing else.
	if _, err := st.Undo(ctx, write.ID, false, snapshot.CallInfo{Session: "cli"}); err != nil {
		t.Fatalf("undo %s: %v", write.ID, err)
	}
	for rel, want := range map[string]string{"gate": "<absent>", "other.txt": "two\n", "from_shell.txt": "<absent>"} {
		if got := read(rel); got != want {
			t.Fatalf("after undo of the Write: %s = %q, want %q", rel, got, want)
		}
	}
}

// hostSessions opens a tools workspace on a fresh workspace with the host
// image, a real runner and approver, and two sessions "a" and "b"; all is
// closed at the end of the test.
func hostSessions(t *testing.T, ctx context.Context, approver tools.ApproverFunc) (ws string, cfg *config.Config, sys *workspace.Tools, sessA, sessB *tools.Session) {
	t.Helper()
	ensureHostImage(t)
	ws = newWorkspace(t)
	cfg = testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	cfg.Sandbox.PoolSize = 2
	runner, err := docker.New(ctx, cli, cfg, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	sys, err = workspace.Open(ctx, cfg, workspace.Options{Register: builtin.Register, Runner: runner, Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(context.Background()) })
	if sessA, err = sys.Sessions.Load("a"); err != nil {
		t.Fatal(err)
	}
	if sessB, err = sys.Sessions.Load("b"); err != nil {
		t.Fatal(err)
	}
	return ws, cfg, sys, sessA, sessB
}
