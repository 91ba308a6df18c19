//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRootOwnedWorkspaceMessage: with a root-owned workspace, the MCP
// result of a command, the CLI's and `doctor` give the real reason and the
// fixes (chown, sandbox.allow_root_workspace) — never "start the engine",
// and doctor does not call it ready.
func TestRootOwnedWorkspaceMessage(t *testing.T) {
	e := newMCPEnv(t, "")
	if err := os.Chown(e.ws, 0, 0); err != nil {
		t.Fatal(err)
	}
	plan := []tsStep{{"op": "call", "id": "ls", "name": "Bash", "args": map[string]any{"command": "ls"}}}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")}, "steps": plan})
	r := byID(t, plan, res)["ls"]
	check := func(where, text string) {
		t.Helper()
		if !strings.Contains(text, "owned by root") || !strings.Contains(text, "chown -R USER: "+e.ws) ||
			!strings.Contains(text, "sandbox.allow_root_workspace") || strings.Contains(text, "engine start") {
			t.Errorf("%s:\n%s", where, text)
		}
	}
	if !r.isError() || r.errorKind() != "permission_denied" {
		t.Errorf("MCP result: kind %q, isError %v", r.errorKind(), r.isError())
	}
	check("MCP result", r.text())
	out, code := e.agentboxCLI(t, "tool", "Bash", `{"command":"ls"}`)
	if code == 0 {
		t.Errorf("agentbox tool succeeded")
	}
	check("agentbox tool", out)
	// A command that would run unasked where contained asks instead, and
	// the question says the real reason.
	auto := filepath.Join(t.TempDir(), "auto.yaml")
	if err := os.WriteFile(auto, []byte("tools:\n  auto_allow_sandboxed: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(agentbox, "--workspace", e.ws, "--state-dir", e.state, "--config", auto, "tool", "Bash", `{"command":"touch x"}`).CombinedOutput()
	if out := string(b); err == nil || strings.Contains(out, "sandbox is unavailable") || !strings.Contains(out, "did not run unasked because the workspace") {
		t.Errorf("agentbox tool touch x (%v):\n%s", err, out)
	} else {
		check("agentbox tool touch x", out)
	}
	out, code = e.agentboxCLI(t, "doctor")
	if code == 0 || strings.Contains(out, "agentbox is ready") {
		t.Errorf("doctor (exit %d) calls a root-owned workspace ready:\n%s", code, out)
	}
	check("doctor", out)
}

// TestRootOwnedWorkspaceFixed: once the person gives the workspace to a
// user, the same MCP session runs commands: the refusal is not remembered.
func TestRootOwnedWorkspaceFixed(t *testing.T) {
	e := newMCPEnv(t, "")
	if err := os.Chown(e.ws, 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(agentbox, e.args("mcp")...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost())
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ls := func() (bool, string) {
		res, err := sess.CallTool(ctx, &mcpsdk.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "ls"}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res.IsError, b.String()
	}
	if failed, text := ls(); !failed || !strings.Contains(text, "owned by root") {
		t.Fatalf("root-owned: %v %s", failed, text)
	}
	if err := os.Chown(e.ws, wsUID, wsGID); err != nil {
		t.Fatal(err)
	}
	if failed, text := ls(); failed {
		t.Fatalf("after chown the session still refuses: %s", text)
	}
}
