//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// TestToolsThroughSandbox runs Write, Edit and Bash through the whole
// pipeline with the real sandbox and snapshot store, then undoes every
// call and checks the workspace is back as it was, and the audit chain.
func TestToolsThroughSandbox(t *testing.T) {
	ensureHostImage(t)
	ws := newWorkspace(t)
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runner, err := docker.New(ctx, cli, cfg, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	defer runner.Close(context.Background())
	var asked []string
	sys, err := workspace.Open(ctx, cfg, workspace.Options{
		Register: builtin.Register,
		Runner:   runner,
		Approver: tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
			asked = append(asked, r.Summary)
			return tools.Approval{Allow: true, By: "test"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := sys.Sessions.Load("it")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	call := func(tool, input string) tools.Response {
		t.Helper()
		calls++
		r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: json.RawMessage(input)})
		return r
	}
	ok := func(r tools.Response) tools.Response {
		t.Helper()
		if r.Err != nil {
			t.Fatalf("call failed: %v\n%s", r.Err, r.Content)
		}
		return r
	}
	file := filepath.Join(ws, "a.txt")
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}

	w := ok(call("Write", `{"file_path":"a.txt","content":"one\n"}`))
	j1, _ := w.Meta["journal_id"].(string)
	if read() != "one\n" || j1 == "" {
		t.Fatalf("after Write: %q, journal %q, meta %v", read(), j1, w.Meta)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil || st.Uid != wsUID {
		t.Fatalf("written file owned by %d, want the workspace owner %d (%v)", st.Uid, wsUID, err)
	}

	// A change behind the session's back makes Edit refuse until a Read.
	must(t, os.WriteFile(file, []byte("one\n"), 0o644))
	must(t, os.Chtimes(file, time.Now(), time.Now().Add(time.Second)))
	ok(call("Read", `{"file_path":"a.txt"}`))
	e := ok(call("Edit", `{"file_path":"a.txt","old_string":"one","new_string":"two"}`))
	j2, _ := e.Meta["journal_id"].(string)
	if read() != "two\n" || j2 == "" || j2 == j1 || !strings.Contains(e.Content, "+two") {
		t.Fatalf("after Edit: %q %q %q", read(), j2, e.Content)
	}

	b := ok(call("Bash", `{"command":"echo three >> a.txt && mkdir d && echo x > d/f && cd d"}`))
	j3, _ := b.Meta["journal_id"].(string)
	if read() != "two\nthree\n" || j3 == "" || b.Meta["container_id"] == nil {
		t.Fatalf("after Bash: %q, meta %v", read(), b.Meta)
	}
	// Contained in the real sandbox and journaled: it ran without asking
	// (tools.auto_allow_sandboxed, on by default).
	if len(asked) != 0 || b.Meta["auto_allowed"] != "contained" {
		t.Fatalf("approvals asked: %v, meta %v", asked, b.Meta)
	}
	changes, _ := json.Marshal(b.Meta["changes"])
	for _, want := range []string{`"a.txt"`, `"d"`, `"d/f"`} {
		if !strings.Contains(string(changes), want) {
			t.Fatalf("changes %s lack %s", changes, want)
		}
	}
	// The working directory persists across calls in the session.
	if p := ok(call("Bash", `{"command":"pwd"}`)); strings.TrimSpace(p.Content) != filepath.Join(ws, "d") {
		t.Fatalf("pwd after cd: %q", p.Content)
	}
	// Read-only commands are neither asked about nor journaled.
	if r := ok(call("Bash", `{"command":"ls -la"}`)); r.Meta["journal_id"] != nil || len(asked) != 0 || r.Meta["auto_allowed"] != nil {
		t.Fatalf("read-only command: meta %v, asked %v", r.Meta, asked)
	}
	// Forbidden never runs, whoever approves.
	if r := call("Bash", `{"command":"rm -rf /"}`); r.Err == nil || r.Err.Kind != tools.ErrForbidden {
		t.Fatalf("forbidden command: %+v", r)
	}
	if err := sys.Sessions.Save(sess); err != nil {
		t.Fatal(err)
	}
	if err := sys.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Undo newest first: each call's changes revert exactly.
	store, err := snapshot.Open(ctx, cfg.WorkspaceStateDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	info := snapshot.CallInfo{Session: "it", Tool: "undo"}
	if _, err := store.Undo(ctx, j3, false, info); err != nil {
		t.Fatalf("undo Bash: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "d")); !os.IsNotExist(err) || read() != "two\n" {
		t.Fatalf("after undo of Bash: d %v, a.txt %q", err, read())
	}
	if _, err := store.Undo(ctx, j2, false, info); err != nil || read() != "one\n" {
		t.Fatalf("undo Edit: %v, %q", err, read())
	}
	if _, err := store.Undo(ctx, j1, false, info); err != nil {
		t.Fatalf("undo Write: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a.txt survived the undo of its Write: %v", err)
	}

	log, _ := audit.Open(workspace.AuditPath(cfg))
	n, err := log.Verify()
	if err != nil || n != calls {
		t.Fatalf("audit: %d records (want %d): %v", n, calls, err)
	}
	recs, _ := log.Read()
	var bash audit.Record
	for _, r := range recs {
		if r.JournalID == j3 {
			bash = r
		}
	}
	if bash.Tool != "Bash" || bash.ContainerID == "" || bash.ExitCode == nil || *bash.ExitCode != 0 ||
		bash.Decision != "allow" || bash.DecidedBy != "auto_allow_sandboxed" || !slices.Contains(bash.Changed, "d/f") || bash.Verdict == nil {
		t.Fatalf("audit record of the Bash call: %+v", bash)
	}
}

// TestToolCLI drives `agentbox tool` as a shell script would: Read then
// Edit in one CLI session, the --json shape, and `audit verify`.
func TestToolCLI(t *testing.T) {
	e := newMCPEnv(t, "")
	e.writeFile(t, "n.txt", []byte("alpha\n"))
	run := func(args ...string) map[string]any {
		t.Helper()
		out, code := e.agentboxCLI(t, append(args, "--json")...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("agentbox %v (exit %d) printed %q: %v", args, code, out, err)
		}
		keys := []string{}
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if args[0] == "tool" && strings.Join(keys, ",") != "call_id,content,display,error,meta,ok" {
			t.Fatalf("tool --json keys %v", keys)
		}
		if (m["ok"] == true) != (code == 0) {
			t.Fatalf("ok %v with exit %d", m["ok"], code)
		}
		return m
	}
	if m := run("tool", "Edit", `{"file_path":"n.txt","old_string":"alpha","new_string":"beta"}`); m["ok"] != false || m["error"].(map[string]any)["kind"] != "conflict" {
		t.Fatalf("edit before read: %v", m)
	}
	if m := run("tool", "Read", `{"file_path":"n.txt"}`); m["ok"] != true || !strings.Contains(m["content"].(string), "alpha") {
		t.Fatalf("read: %v", m)
	}
	m := run("tool", "Edit", `{"file_path":"n.txt","old_string":"alpha","new_string":"beta"}`)
	if m["ok"] != true || m["meta"].(map[string]any)["journal_id"] == nil {
		t.Fatalf("edit after read in the same CLI session: %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "n.txt")); string(b) != "beta\n" {
		t.Fatalf("n.txt = %q", b)
	}
	if m := run("tool", "Bash", `{"command":"touch x"}`); m["ok"] != false || m["error"].(map[string]any)["kind"] != "needs_approval" {
		t.Fatalf("dangerous command without a person: %v", m)
	}
	if m := run("audit", "verify"); m["ok"] != true || m["records"].(float64) != 4 {
		t.Fatalf("audit verify: %v", m)
	}
}
