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
	h := newTwoSessions(t, ctx, func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
		return tools.Approval{Allow: true, By: "test"}, nil
	})
	cfg, call, must, sessB := h.cfg, h.call, h.must, h.b
	must("Write other.txt", call(ctx, sessB, "Write", `{"file_path":"other.txt","content":"one\n"}`))
	h.startGated(ctx, "touch started; while [ ! -e gate ]; do sleep 0.05; done; echo shell > from_shell.txt")

	bctx, bcancel := context.WithTimeout(ctx, 60*time.Second)
	defer bcancel()
	start := time.Now()
	must("Read while the shell runs", call(bctx, sessB, "Read", `{"file_path":"other.txt"}`))
	must("Edit while the shell runs", call(bctx, sessB, "Edit", `{"file_path":"other.txt","old_string":"one","new_string":"two"}`))
	must("Write gate while the shell runs", call(bctx, sessB, "Write", `{"file_path":"gate","content":"open\n"}`))
	t.Logf("Read, Edit and Write while another session's command ran: %v", time.Since(start))
	must("Bash", h.shellResult())

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
	read := h.read
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

// twoSessions is a tools workspace on a fresh workspace with the host
// image, a real runner and the given approver, and sessions "a" and "b".
type twoSessions struct {
	t      *testing.T
	ws     string
	cfg    *config.Config
	sys    *workspace.Tools
	a, b   *tools.Session
	shell  chan tools.Response
	closed chan struct{}
}

func newTwoSessions(t *testing.T, ctx context.Context, approver tools.ApproverFunc) *twoSessions {
	t.Helper()
	ensureHostImage(t)
	h := &twoSessions{t: t, ws: newWorkspace(t)}
	h.cfg = testConfig(t, h.ws)
	h.cfg.Sandbox.Image = images.Host
	h.cfg.Sandbox.PoolSize = 2
	runner, err := docker.New(ctx, cli, h.cfg, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	h.sys, err = workspace.Open(ctx, h.cfg, workspace.Options{Register: builtin.Register, Runner: runner, Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.sys.Close(context.Background()) })
	if h.a, err = h.sys.Sessions.Load("a"); err != nil {
		t.Fatal(err)
	}
	if h.b, err = h.sys.Sessions.Load("b"); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *twoSessions) call(ctx context.Context, s *tools.Session, tool, input string) tools.Response {
	return h.sys.Pipeline.Run(ctx, tools.Request{Session: s, Tool: tool, Input: json.RawMessage(input)})
}

func (h *twoSessions) must(what string, r tools.Response) {
	h.t.Helper()
	if r.Err != nil {
		h.t.Fatalf("%s: %s: %s\n%s", what, r.Err.Kind, r.Err.Message, r.Content)
	}
}

// read is a workspace file's content, or "<absent>".
func (h *twoSessions) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(h.ws, rel))
	if err != nil {
		return "<absent>"
	}
	return string(b)
}

// startGated runs script as session a's Bash command; script must touch
// "started" and then wait for "gate". It returns once "started" exists;
// the gate is opened at the end of the test whatever failed.
func (h *twoSessions) startGated(ctx context.Context, script string) {
	h.t.Helper()
	h.shell, h.closed = make(chan tools.Response, 1), make(chan struct{})
	in, _ := json.Marshal(map[string]string{"command": script})
	go func() {
		defer close(h.closed)
		h.shell <- h.call(ctx, h.a, "Bash", string(in))
	}()
	h.t.Cleanup(func() {
		if err := os.WriteFile(filepath.Join(h.ws, "gate"), nil, 0o644); err != nil {
			h.t.Error(err)
		}
		<-h.closed
	})
	if !eventually(2*time.Minute, 20*time.Millisecond, func() bool {
		if h.read("started") != "<absent>" {
			return true
		}
		select {
		case r := <-h.shell:
			h.t.Fatalf("the shell command ended before its gate opened: %+v", r)
		default:
		}
		return false
	}) {
		h.t.Fatal("the shell command never started")
	}
}

// shellResult waits for the gated command's result.
func (h *twoSessions) shellResult() tools.Response {
	h.t.Helper()
	select {
	case r := <-h.shell:
		return r
	case <-time.After(90 * time.Second):
		h.t.Fatal("the shell command did not end after its gate opened")
	}
	return tools.Response{}
}
