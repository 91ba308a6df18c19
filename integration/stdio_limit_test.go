//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdioLargeWrite: the real TypeScript MCP client writes, over stdio,
// a file larger than go-sdk's 16 MiB line bound (tools.max_input_bytes is
// 32 MiB by default): it is written whole. A Write beyond the limit gets a
// clean error, and the same session then still serves calls.
func TestStdioLargeWrite(t *testing.T) {
	e := newMCPEnv(t, "")
	big := strings.Repeat("0123456789abcde\n", 17<<20/16) // 17 MiB
	huge := strings.Repeat("x", 34<<20)                   // beyond 32 MiB + 1 MiB
	plan := []tsStep{
		{"op": "call", "id": "big", "name": "Write", "args": map[string]any{"file_path": filepath.Join(e.ws, "big.txt"), "content": big}, "timeout_ms": 300000},
		{"op": "call", "id": "huge", "name": "Write", "args": map[string]any{"file_path": filepath.Join(e.ws, "huge.txt"), "content": huge}},
		{"op": "call", "id": "after", "name": "LS", "args": map[string]any{"path": e.ws}},
	}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")}, "steps": plan})
	r := byID(t, plan, res)
	if r["big"].isError() || r["big"]["error"] != nil {
		t.Fatalf("17 MiB Write: %v %.300s", r["big"]["error"], r["big"].text())
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "big.txt")); err != nil || string(b) != big {
		t.Fatalf("big.txt: %v, %d bytes, want %d", err, len(b), len(big))
	}
	if msg, _ := r["huge"]["error"].(string); !strings.Contains(msg, "tools.max_input_bytes") {
		t.Fatalf("Write beyond the limit: %v %.300s", r["huge"]["error"], r["huge"].text())
	}
	if _, err := os.Stat(filepath.Join(e.ws, "huge.txt")); err == nil {
		t.Fatal("huge.txt was written")
	}
	if r["after"].isError() || !strings.Contains(r["after"].text(), "big.txt") {
		t.Fatalf("the session after the refusal: %v %.300s", r["after"]["error"], r["after"].text())
	}
}
