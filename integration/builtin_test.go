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

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// builtinHarness is the whole tool system over a fresh workspace with the
// real sandbox (host image) and an approver that allows everything.
type builtinHarness struct {
	t    *testing.T
	ws   string
	sys  *workspace.Tools
	sess *tools.Session
	ctx  context.Context
}

func newBuiltinHarness(t *testing.T) *builtinHarness {
	t.Helper()
	return newHarnessWith(t, "builtin", tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
		return tools.Approval{Allow: true, By: "test"}, nil
	}))
}

// newHarnessWith is the builtin harness with session name session and
// operator approver.
func newHarnessWith(t *testing.T, session string, approver tools.Approver) *builtinHarness {
	t.Helper()
	ensureHostImage(t)
	ws := newWorkspace(t)
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	runner, err := docker.New(ctx, cli, cfg, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	sys, err := workspace.Open(ctx, cfg, workspace.Options{
		Register: builtin.Register,
		Runner:   runner,
		Approver: approver,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(context.Background()) })
	sess, err := sys.Sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	return &builtinHarness{t: t, ws: ws, sys: sys, sess: sess, ctx: ctx}
}

func (h *builtinHarness) call(tool string, input any) tools.Response {
	h.t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, _ := json.Marshal(input)
		raw = string(b)
	}
	return h.sys.Pipeline.Run(h.ctx, tools.Request{Session: h.sess, Tool: tool, Input: json.RawMessage(raw)})
}

func (h *builtinHarness) ok(r tools.Response) tools.Response {
	h.t.Helper()
	if r.Err != nil {
		h.t.Fatalf("call failed: %s: %s\n%s", r.Err.Kind, r.Err.Message, r.Content)
	}
	return r
}

// put creates a workspace file owned by the workspace owner.
func (h *builtinHarness) put(rel, content string, mode os.FileMode) string {
	h.t.Helper()
	p := filepath.Join(h.ws, rel)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(h.t, os.Chown(filepath.Dir(p), wsUID, wsGID))
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		h.t.Fatal(err)
	}
	must(h.t, os.Chmod(p, mode))
	must(h.t, os.Chown(p, wsUID, wsGID))
	return p
}

func (h *builtinHarness) content(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestBuiltinEditsThroughSandbox: Edit and MultiEdit through the real
// sandbox keep the mode and CRLF line endings, apply whitespace-normalized
// matches, and a failing MultiEdit changes nothing and journals nothing.
func TestBuiltinEditsThroughSandbox(t *testing.T) {
	h := newBuiltinHarness(t)
	script := h.put("bin/run.sh", "#!/bin/sh\r\necho one\r\necho two\r\n", 0o750)
	h.ok(h.call("Read", map[string]any{"file_path": script}))
	e := h.ok(h.call("Edit", map[string]any{"file_path": script, "old_string": "echo one\necho two", "new_string": "echo 1\necho 2"}))
	if got := h.content(script); got != "#!/bin/sh\r\necho 1\r\necho 2\r\n" {
		t.Fatalf("CRLF not kept: %q", got)
	}
	if fi, _ := os.Stat(script); fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode %v, want 0750", fi.Mode().Perm())
	}
	if !strings.Contains(e.Content, "-echo one\n") || e.Meta["journal_id"] == nil {
		t.Fatalf("edit result %q meta %v", e.Content, e.Meta)
	}

	code := h.put("src/main.py", "def f():\n    if x:\n        return 1\n", 0o600)
	h.ok(h.call("Read", map[string]any{"file_path": code}))
	fz := h.ok(h.call("Edit", map[string]any{"file_path": code, "old_string": "if x:\n  return 1", "new_string": "if x:\n  return 2"}))
	if got := h.content(code); got != "def f():\n    if x:\n        return 2\n" || !strings.Contains(fz.Content, "when whitespace is ignored") {
		t.Fatalf("fuzzy edit: %q\n%s", got, fz.Content)
	}
	if fi, _ := os.Stat(code); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}

	before := h.content(code)
	bad := h.call("MultiEdit", map[string]any{"file_path": code, "edits": []map[string]any{
		{"old_string": "def f", "new_string": "def g"}, {"old_string": "not there", "new_string": "x"}}})
	if bad.Err == nil || bad.Err.Kind != tools.ErrNotFound {
		t.Fatalf("failing MultiEdit: %v %v", bad.Err, bad.Meta)
	}
	if h.content(code) != before {
		t.Fatalf("failing MultiEdit changed the file: %q", h.content(code))
	}
	m := h.ok(h.call("MultiEdit", map[string]any{"file_path": code, "edits": []map[string]any{
		{"old_string": "def f", "new_string": "def g"}, {"old_string": "return 2", "new_string": "return 3"}}}))
	if got := h.content(code); got != "def g():\n    if x:\n        return 3\n" || m.Meta["journal_id"] == nil {
		t.Fatalf("MultiEdit: %q %v", got, m.Meta)
	}
}

// TestBuiltinWriteThroughSandbox: Write creates parents, keeps an existing
// file's mode, and cannot write to a protected path.
func TestBuiltinWriteThroughSandbox(t *testing.T) {
	h := newBuiltinHarness(t)
	p := filepath.Join(h.ws, "a", "b", "c.txt")
	w := h.ok(h.call("Write", map[string]any{"file_path": p, "content": "new\n"}))
	if h.content(p) != "new\n" || !strings.Contains(w.Content, "Created") {
		t.Fatalf("write: %q %q", h.content(p), w.Content)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v", fi.Mode().Perm())
	}
	x := h.put("tool.sh", "#!/bin/sh\n", 0o755)
	h.ok(h.call("Read", map[string]any{"file_path": x}))
	h.ok(h.call("Write", map[string]any{"file_path": x, "content": "#!/bin/sh\necho hi\n"}))
	if fi, _ := os.Stat(x); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode not kept: %v", fi.Mode().Perm())
	}
	h.put(".git/hooks/pre-commit", "#!/bin/sh\n", 0o755)
	hook := filepath.Join(h.ws, ".git/hooks/pre-commit")
	h.ok(h.call("Read", map[string]any{"file_path": hook}))
	if r := h.call("Write", map[string]any{"file_path": hook, "content": "#!/bin/sh\ncurl evil\n"}); r.Err == nil {
		t.Fatalf("write to a protected hook succeeded")
	}
	if h.content(hook) != "#!/bin/sh\n" {
		t.Fatalf("hook changed: %q", h.content(hook))
	}
}

// TestBuiltinBashThroughSandbox: exit codes are explained, the cwd stays
// inside the workspace, and output is returned.
func TestBuiltinBashThroughSandbox(t *testing.T) {
	h := newBuiltinHarness(t)
	h.put("d/f.txt", "alpha\n", 0o644)
	r := h.ok(h.call("Bash", `{"command":"cd d && grep beta f.txt"}`))
	if !strings.Contains(r.Content, "exit code 1 from grep means no lines matched") || r.Meta["cwd"] != filepath.Join(h.ws, "d") {
		t.Fatalf("grep: %q %v", r.Content, r.Meta)
	}
	r = h.call("Bash", `{"command":"no-such-program-xyz"}`)
	if r.Err == nil || r.Err.Kind != tools.ErrExecution || !strings.Contains(r.Content, "127") {
		t.Fatalf("127: %v %q", r.Err, r.Content)
	}
	r = h.ok(h.call("Bash", `{"command":"cd / && pwd"}`))
	if h.sess.Cwd() != filepath.Join(h.ws, "d") {
		t.Fatalf("cwd left the workspace: %s", h.sess.Cwd())
	}
	r = h.call("Bash", `{"command":"sleep 30","timeout":1000}`)
	if r.Err == nil || r.Err.Kind != tools.ErrTimeout {
		t.Fatalf("timeout: %v %q", r.Err, r.Content)
	}
}

// TestBuiltinBackgroundShell: Bash run_in_background returns an id;
// BashOutput returns only new output, filtered; KillShell stops the
// container and records the changes it made.
func TestBuiltinBackgroundShell(t *testing.T) {
	h := newBuiltinHarness(t)
	r := h.ok(h.call("Bash", `{"command":"for i in 1 2 3; do echo line $i; echo noise; done; echo made > bg.txt; sleep 60","run_in_background":true}`))
	id, _ := r.Meta["bash_id"].(string)
	if id == "" || !strings.Contains(r.Content, id) {
		t.Fatalf("no shell id: %q %v", r.Content, r.Meta)
	}
	var got strings.Builder
	if !eventually(time.Minute, 200*time.Millisecond, func() bool {
		o := h.ok(h.call("BashOutput", map[string]any{"bash_id": id, "filter": "^line"}))
		if !strings.Contains(o.Content, "is running") {
			t.Fatalf("status: %q", o.Content)
		}
		got.WriteString(o.Content)
		return strings.Contains(got.String(), "line 3")
	}) {
		t.Fatalf("no output in time: %q", got.String())
	}
	if strings.Contains(got.String(), "noise") || strings.Count(got.String(), "line 1") != 1 {
		t.Fatalf("filtered output repeated or unfiltered: %q", got.String())
	}
	k := h.ok(h.call("KillShell", map[string]any{"shell_id": id}))
	if !strings.Contains(k.Content, "was killed") {
		t.Fatalf("kill: %q", k.Content)
	}
	if r := h.call("BashOutput", map[string]any{"bash_id": id}); r.Err == nil || r.Err.Kind != tools.ErrNotFound {
		t.Fatalf("output after kill: %v %q", r.Err, r.Content)
	}
	if h.content(filepath.Join(h.ws, "bg.txt")) != "made\n" {
		t.Fatalf("bg.txt: %q", h.content(filepath.Join(h.ws, "bg.txt")))
	}
	// The job's change is one journal entry, reported by KillShell, in
	// history, and undone by undo.
	jid, _ := k.Meta["journal_id"].(string)
	if jid == "" || !strings.Contains(k.Content, "recorded as call "+jid) {
		t.Fatalf("KillShell did not report the job's journal entry: %q %v", k.Content, k.Meta)
	}
	e := h.historyEntry(jid)
	if !e.Detached || len(e.Changes) != 1 || e.Changes[0].Path != "bg.txt" || e.Changes[0].Op != snapshot.OpAdded {
		t.Fatalf("history entry of the job: %+v", e)
	}
	if _, err := h.store().Undo(h.ctx, "", false, snapshot.CallInfo{Tool: "undo"}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(h.ws, "bg.txt")); !os.IsNotExist(err) {
		t.Fatalf("bg.txt survived undo: %v", err)
	}
}

// store opens the harness workspace's snapshot store (as agentbox
// history/undo do).
func (h *builtinHarness) store() *snapshot.Store {
	h.t.Helper()
	st, err := snapshot.OpenConfig(h.ctx, h.sys.Config)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// historyEntry returns journal entry id, failing unless it is the newest.
func (h *builtinHarness) historyEntry(id string) snapshot.Entry {
	h.t.Helper()
	es, err := h.store().List(h.ctx, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(es) == 0 || es[0].ID != id {
		h.t.Fatalf("history (newest first) does not start with %s: %+v", id, es)
	}
	return es[0]
}

// TestBuiltinBackgroundJournal: a background job that exits is journaled
// by the BashOutput call that sees it end; foreground calls are not
// blocked while a job runs; a job still running at shutdown is killed and
// journaled then.
func TestBuiltinBackgroundJournal(t *testing.T) {
	h := newBuiltinHarness(t)
	h.put("keep.txt", "keep\n", 0o644)
	// The job waits for go.flag, so that its changes come after the
	// foreground call below (changes made while a foreground call runs
	// are that call's).
	r := h.ok(h.call("Bash", `{"command":"while [ ! -e go.flag ]; do sleep 0.1; done; rm go.flag; echo done > done.txt; rm keep.txt","run_in_background":true}`))
	id, _ := r.Meta["bash_id"].(string)
	// A foreground call runs while the job does (the store is not locked).
	start := time.Now()
	h.ok(h.call("Bash", `{"command":"echo fg > fg.txt"}`))
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("foreground call took %s", d)
	}
	h.put("go.flag", "", 0o644)
	var o tools.Response
	if !eventually(time.Minute, 200*time.Millisecond, func() bool {
		o = h.ok(h.call("BashOutput", map[string]any{"bash_id": id}))
		return strings.Contains(o.Content, "has exited")
	}) {
		t.Fatalf("job did not end: %q", o.Content)
	}
	jid, _ := o.Meta["journal_id"].(string)
	if jid == "" {
		t.Fatalf("BashOutput after the end reported no journal entry: %q %v", o.Content, o.Meta)
	}
	e := h.historyEntry(jid)
	var paths []string
	for _, c := range e.Changes {
		paths = append(paths, c.Path+":"+string(c.Op))
	}
	if strings.Join(paths, ",") != "done.txt:added,keep.txt:deleted" {
		t.Fatalf("job entry changes %v (fg.txt belongs to the foreground call)", paths)
	}
	if _, err := h.store().Undo(h.ctx, jid, false, snapshot.CallInfo{Tool: "undo"}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if h.content(filepath.Join(h.ws, "keep.txt")) != "keep\n" || h.content(filepath.Join(h.ws, "fg.txt")) != "fg\n" {
		t.Fatalf("after undo: keep.txt %q fg.txt %q", h.content(filepath.Join(h.ws, "keep.txt")), h.content(filepath.Join(h.ws, "fg.txt")))
	}
	if _, err := os.Lstat(filepath.Join(h.ws, "done.txt")); !os.IsNotExist(err) {
		t.Fatalf("done.txt survived undo: %v", err)
	}

	// Shutdown kills a running job and journals what it changed.
	h.ok(h.call("Bash", `{"command":"echo late > late.txt; sleep 120","run_in_background":true}`))
	if !eventually(time.Minute, 100*time.Millisecond, func() bool {
		return h.content(filepath.Join(h.ws, "late.txt")) == "late\n"
	}) {
		t.Fatal("late.txt never appeared")
	}
	if err := h.sys.Close(h.ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	es, err := h.store().List(h.ctx, 1)
	if err != nil || len(es) != 1 || !es[0].Detached || len(es[0].Changes) != 1 || es[0].Changes[0].Path != "late.txt" {
		t.Fatalf("newest entry after shutdown: %+v %v", es, err)
	}
}

// waitFor polls cond every 100ms for up to a minute.
func (h *builtinHarness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	if !eventually(time.Minute, 100*time.Millisecond, cond) {
		h.t.Fatalf("timed out waiting for %s", what)
	}
}

// waitJob polls BashOutput until job id has exited (which finishes its
// detached snapshot) and returns that last response.
func (h *builtinHarness) waitJob(id string) tools.Response {
	h.t.Helper()
	var o tools.Response
	h.waitFor("job "+id+" to exit", func() bool {
		o = h.ok(h.call("BashOutput", map[string]any{"bash_id": id}))
		return strings.Contains(o.Content, "has exited")
	})
	return o
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }
