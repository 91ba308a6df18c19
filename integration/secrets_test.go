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
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// TestSecretsThroughSandbox runs the secret path rules through the real
// pipeline and sandbox: with auto_allow_sandboxed on and an allow rule for
// cat, the shell forms that
// read .env (a glob, a bracket class, ?, a substitution, xxd, a symlink)
// and Read itself are asked about before anything runs; when the person
// refuses, the secret never reaches the result, and when they allow, the
// command really runs in the sandbox. An ordinary read runs unasked.
func TestSecretsThroughSandbox(t *testing.T) {
	ensureHostImage(t)
	ws := newWorkspace(t)
	for name, content := range map[string]string{".env": "TOKEN=s3cr3t-value\n", "notes.txt": "plain notes\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(ws, name), wsUID, wsGID)
	}
	os.Symlink(".env", filepath.Join(ws, "innocent"))
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	cfg.Tools.Allow = []string{"Bash(cat:*)", "Bash(head:*)", "Bash(xxd:*)", "Read"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runner, err := docker.New(ctx, cli, cfg, nil)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	defer runner.Close(context.Background())
	var asked []tools.ApprovalRequest
	allow := false
	sys, err := workspace.Open(ctx, cfg, workspace.Options{
		Register: builtin.Register,
		Runner:   runner,
		Approver: tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
			asked = append(asked, r)
			return tools.Approval{Allow: allow, By: "test"}, nil
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
	call := func(tool string, in any) tools.Response {
		b, _ := json.Marshal(in)
		return sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: b})
	}
	bash := func(cmd string) map[string]string { return map[string]string{"command": cmd} }

	if r := call("Bash", bash("cat notes.txt")); r.Err != nil || !strings.Contains(r.Content, "plain notes") || len(asked) != 0 {
		t.Fatalf("an ordinary read: %+v, asked %d", r, len(asked))
	}
	// auto_allow_sandboxed (the default) is on: a contained dangerous
	// command runs unasked, so the questions below are the secret rules'.
	if r := call("Bash", bash("touch made-by-test")); r.Err != nil || len(asked) != 0 {
		t.Fatalf("a contained command under auto_allow_sandboxed: %+v, asked %d", r.Err, len(asked))
	}
	for _, tc := range []struct {
		tool string
		in   any
	}{
		{"Bash", bash("cat .e*")},
		{"Bash", bash("cat .[e]nv")},
		{"Bash", bash("head -c 999 .en?")},
		{"Bash", bash("cat $(ls -a | grep env)")},
		{"Bash", bash("xxd .env")},
		{"Bash", bash("cat innocent")},
		{"Read", map[string]string{"file_path": filepath.Join(ws, ".env")}},
	} {
		asked = nil
		r := call(tc.tool, tc.in)
		if r.Err == nil || strings.Contains(r.Content, "s3cr3t") || strings.Contains(r.Err.Message, "s3cr3t") {
			t.Errorf("%s %v ran or leaked: %+v", tc.tool, tc.in, r)
		}
		if len(asked) != 1 || !strings.Contains(asked[0].Reason, "Read(.env*)") {
			t.Errorf("%s %v: asked %+v, want one question naming Read(.env)", tc.tool, tc.in, asked)
		}
	}
	// Approved, the command runs for real in the sandbox.
	allow = true
	if r := call("Bash", bash("cat .e*")); r.Err != nil || !strings.Contains(r.Content, "s3cr3t-value") {
		t.Fatalf("approved cat .e*: %+v", r)
	}
}
