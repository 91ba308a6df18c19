//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadlessClientCancels: the real TypeScript MCP client declares
// elicitation but cancels (or declines) every request at once, as
// `claude -p` and `codex exec` do. The refusal says the client answered by
// itself and names what would allow the call; it never claims a person
// refused it.
func TestHeadlessClientCancels(t *testing.T) {
	e := newMCPEnv(t, "")
	plan := []tsStep{
		{"op": "call", "id": "cancel", "name": "Write", "args": map[string]any{"file_path": filepath.Join(e.ws, ".envrc"), "content": "export A=1\n"}, "elicit": []string{"cancel"}},
		{"op": "call", "id": "decline", "name": "Write", "args": map[string]any{"file_path": filepath.Join(e.ws, ".envrc"), "content": "export A=1\n"}, "elicit": []string{"decline"}},
	}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")}, "steps": plan})
	r := byID(t, plan, res)
	for _, id := range []string{"cancel", "decline"} {
		text := r[id].text()
		if !r[id].isError() || r[id].errorKind() != "needs_approval" || strings.Contains(text, "a person refused") ||
			!strings.Contains(text, "answered the approval request itself") || !strings.Contains(text, "What would allow it") {
			t.Errorf("%s: kind %q\n%s", id, r[id].errorKind(), text)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, ".envrc")); err == nil {
		t.Error(".envrc was written")
	}
}
