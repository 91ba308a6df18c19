//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
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
	out, code = e.agentboxCLI(t, "doctor")
	if code == 0 || strings.Contains(out, "agentbox is ready") {
		t.Errorf("doctor (exit %d) calls a root-owned workspace ready:\n%s", code, out)
	}
	check("doctor", out)
}
