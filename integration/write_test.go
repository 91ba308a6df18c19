//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// TestWriteThroughInit: Write and Edit reach the file through the
// container's init (no shell: the minimal image has no part in it), with
// content far beyond one frame, and the kernel's refusals come back as
// errors the model can act on.
func TestWriteThroughInit(t *testing.T) {
	ws := newWorkspace(t)
	outside := t.TempDir()
	own := func(p string) {
		t.Helper()
		if err := os.Lchown(p, wsUID, wsGID); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		own(p)
	}
	// An existing protected directory: mounted read-only in the sandbox.
	if err := os.Mkdir(filepath.Join(ws, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	own(filepath.Join(ws, ".vscode"))
	mustWrite(filepath.Join(ws, ".vscode", "settings.json"), "{}\n")
	mustWrite(filepath.Join(outside, "target"), "outside\n")
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	own(filepath.Join(ws, "link"))
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	own(filepath.Join(ws, "sub"))
	if err := os.Symlink("sub", filepath.Join(ws, "inlink")); err != nil {
		t.Fatal(err)
	}
	own(filepath.Join(ws, "inlink"))

	cfg := testConfig(t, ws)
	cfg.Tools.Mode = "acceptEdits"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runner, _ := newRunner(t, ws, func(c *config.Config) { *c = *cfg })
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
	defer sys.Close(context.Background())
	sess, err := sys.Sessions.Load("it")
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool string, input map[string]any) tools.Response {
		t.Helper()
		raw, _ := json.Marshal(input)
		return sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: raw})
	}

	t.Run("20 MB", func(t *testing.T) {
		content := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz\n", 20_000_000/37)
		path := filepath.Join(ws, "big", "file.txt")
		t0 := time.Now()
		if err := runner.WriteFile(ctx, sandbox.FileWrite{Path: path + ".direct", Content: []byte(content), Mode: 0o644}); err != nil {
			t.Fatalf("runner write: %v", err)
		}
		t.Logf("20 MB through the runner: %v", time.Since(t0))
		t0 = time.Now()
		if r := call("Write", map[string]any{"file_path": path, "content": content}); r.Err != nil {
			t.Fatalf("write: %v", r.Err)
		}
		// Most of it is the audit stage's secret masking of the input.
		t.Logf("20 MB through the pipeline: %v", time.Since(t0))
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(content)) {
			t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(content))
		}
	})
	t.Run("edit keeps the mode", func(t *testing.T) {
		path := filepath.Join(ws, "run.sh")
		mustWrite(path, "echo one\n")
		must(t, os.Chmod(path, 0o751))
		if r := call("Read", map[string]any{"file_path": path}); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r := call("Edit", map[string]any{"file_path": path, "old_string": "one", "new_string": "two"}); r.Err != nil {
			t.Fatalf("edit: %v", r.Err)
		}
		got, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if string(got) != "echo two\n" || fi.Mode().Perm() != 0o751 {
			t.Fatalf("after edit: %q %v", got, fi.Mode())
		}
	})
	t.Run("symlinked parent", func(t *testing.T) {
		// Out of the workspace: the tool layer refuses it already.
		r := call("Write", map[string]any{"file_path": filepath.Join(ws, "link", "target"), "content": "pwned\n"})
		if r.Err == nil {
			t.Fatal("wrote through a symlink out of the workspace")
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "target")); string(b) != "outside\n" {
			t.Fatalf("wrote outside the workspace: %q", b)
		}
		// Inside it: the tool layer lets it pass, init refuses it (as it
		// would a link swapped in after the tool layer looked).
		r = call("Write", map[string]any{"file_path": filepath.Join(ws, "inlink", "x.txt"), "content": "x\n"})
		if r.Err == nil || r.Err.Kind != tools.ErrValidation || !strings.Contains(r.Err.Message, "inlink is a symbolic link") {
			t.Fatalf("write through a symlinked parent: %+v", r.Err)
		}
		if _, err := os.Stat(filepath.Join(ws, "sub", "x.txt")); err == nil {
			t.Fatal("wrote through the symlink")
		}
	})
	t.Run("read-only protected path", func(t *testing.T) {
		asked = nil
		path := filepath.Join(ws, ".vscode", "settings.json")
		if r := call("Read", map[string]any{"file_path": path}); r.Err != nil {
			t.Fatal(r.Err)
		}
		r := call("Write", map[string]any{"file_path": path, "content": `{"terminal.integrated.shell.linux":"/tmp/x"}`})
		if len(asked) == 0 {
			t.Error("a protected write was not asked about")
		}
		if r.Err == nil || r.Err.Kind != tools.ErrPermissionDenied || !strings.Contains(r.Err.Message, "read-only") {
			t.Fatalf("approved write to a read-only protected path: %+v", r.Err)
		}
		if b, _ := os.ReadFile(path); string(b) != "{}\n" {
			t.Fatalf("settings.json changed: %q", b)
		}
	})
	t.Run("no temporary files left", func(t *testing.T) { rt5NoTemp(t, ws) })
}

// TestWriteReusesContainer: a write runs nothing of the agent's, so its
// container goes back to the pool and serves the next request: many
// writes start no container, a refused write keeps the stream in step,
// and a command after them still runs in that container and then ends it
// (a container in which a command ran never serves again).
func TestWriteReusesContainer(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.WaitWarm(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ours := func() map[string]bool {
		l, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelExecutor+"="+r.ID()))})
		must(t, err)
		m := map[string]bool{}
		for _, c := range l {
			m[c.ID] = true
		}
		return m
	}
	before := ours()
	for i := range 12 {
		p := filepath.Join(ws, "f", strconv.Itoa(i))
		if err := r.WriteFile(ctx, sandbox.FileWrite{Path: p, Content: []byte(strings.Repeat("x", i*1000)), Mode: 0o644}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if i == 5 {
			// Refused by init (the parent is a symlink) before it read
			// the content: the next request must still be understood.
			must(t, os.Symlink("/etc", filepath.Join(ws, "l")))
			err := r.WriteFile(ctx, sandbox.FileWrite{Path: filepath.Join(ws, "l", "x"), Content: bytes.Repeat([]byte("y"), 3<<20), Mode: 0o644})
			if err == nil {
				t.Fatal("a write through a symlinked parent succeeded")
			}
		}
	}
	// The first write took the pool's read-write container and kept it
	// for writes (the pool refilled once); every later write reused it.
	var started []string
	for id := range ours() {
		if !before[id] {
			started = append(started, id)
		}
	}
	if len(started) > 1 {
		t.Errorf("writes started %d containers (%.12s): a write's container should have been reused", len(started), started)
	}
	res, err := runIn(t, r, sandbox.Spec{Shell: "cat f/11 | wc -c; echo $$"})
	if err != nil || res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "11000\n") {
		t.Fatalf("command after reused writes: %v %+v %q", err, res, res.Stdout)
	}
	if before[res.ContainerID] {
		t.Errorf("the command ran in %.12s, a container kept for writes", res.ContainerID)
	}
	for id := range before {
		if !ours()[id] {
			t.Errorf("container %.12s, which served the writes (or the read-only pool), is gone", id)
		}
	}
	// The next write still finds the container kept for writes (once the
	// pool has replaced the command's container).
	if err := r.WaitWarm(ctx, 1); err != nil {
		t.Fatal(err)
	}
	was := ours()
	if err := r.WriteFile(ctx, sandbox.FileWrite{Path: filepath.Join(ws, "f", "last"), Content: []byte("last"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	for id := range ours() {
		if !was[id] {
			t.Errorf("a write after a command started container %.12s", id)
		}
	}
	// That container ran the agent's process: it is gone, not back in the pool.
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool { return !ours()[res.ContainerID] }) {
		t.Errorf("container %.12s served a command and was not removed", res.ContainerID)
	}
}
