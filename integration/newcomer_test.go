//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNewcomer is the first hour, scripted, as one person on a fresh
// machine would go through it: `make install`, `agentbox setup
// claude-code`, `claude mcp list` shows agentbox connected and Claude Code
// warns about nothing setup wrote, a client
// without elicitation (like Gemini CLI) runs a contained command unasked
// and is told how to undo it, the person runs that undo, a write that
// crosses the boundary (.envrc) is refused, and `agentbox diff --since
// session:ID` shows what the session changed.
func TestNewcomer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClientEnv(t)
	must(t, os.Chown(c.ws, wsUID, wsGID))
	must(t, os.WriteFile(filepath.Join(c.ws, "notes.txt"), []byte("hello\n"), 0o644))
	must(t, os.Chown(filepath.Join(c.ws, "notes.txt"), wsUID, wsGID))

	// 1. make install, into a prefix on the person's PATH.
	prefix := t.TempDir()
	if out, err := exec.CommandContext(ctx, "make", "-C", repoRoot, "install", "PREFIX="+prefix).CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(prefix, "bin", "agentbox")
	path := filepath.Join(prefix, "bin") + ":" + os.Getenv("PATH")
	env := append(append([]string(nil), c.env...), "PATH="+path)
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = c.ws, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}

	// 2. agentbox setup claude-code (user scope), then 3. the real Claude
	// Code lists the server and connects to it.
	out := run(bin, "setup", "claude-code", "--user")
	if !strings.Contains(out, "mcpServers") {
		t.Errorf("setup printed no diff of the MCP entry:\n%s", out)
	}
	claude := filepath.Join(agentClientsDir(t), "node_modules", ".bin", "claude")
	list := run(claude, "mcp", "list")
	if !strings.Contains(list, "agentbox") || !strings.Contains(list, "Connected") {
		t.Fatalf("claude mcp list does not show agentbox connected:\n%s", list)
	}
	// Claude Code reads what setup wrote without a warning at launch.
	if w := claudeLaunchWarnings(t, c); w != "" {
		t.Errorf("Claude Code warns about the settings setup wrote:\n%s", w)
	}

	// 4. A client without elicitation: the refusal names the fix.
	cmd := exec.Command(bin, "mcp")
	cmd.Dir, cmd.Env = c.ws, env
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "gemini-like", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	must(t, err)
	defer sess.Close()
	call := func(command string) (bool, string) {
		res, err := sess.CallTool(ctx, &mcpsdk.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": command}})
		must(t, err)
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcpsdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res.IsError, b.String()
	}
	// A contained command runs unasked (tools.auto_allow_sandboxed, on by
	// default) and the result names the undo.
	refused, text := call("touch made-by-agent.txt")
	if refused || !strings.Contains(text, "ran this without asking") {
		t.Fatalf("a contained command did not run unasked: %s", text)
	}
	m := regexp.MustCompile("`(agentbox undo [0-9a-z]+)`").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the result names no undo:\n%s", text)
	}
	// 5. The person runs the undo it named, verbatim; the agent does it
	// again.
	stateEnv := []string{"PATH=" + path, "HOME=" + c.home, "AGENTBOX_STATE_DIR=" + filepath.Join(filepath.Dir(c.ws), "state")}
	runNamed(t, "agentbox --workspace "+c.ws+" "+strings.TrimPrefix(m[1], "agentbox "), stateEnv)
	if _, err := os.Stat(filepath.Join(c.ws, "made-by-agent.txt")); !os.IsNotExist(err) {
		t.Fatalf("the named undo did not revert the call: %v", err)
	}
	if refused, text = call("touch made-by-agent.txt"); refused {
		t.Fatalf("the second touch was refused: %s", text)
	}
	// Where the boundary is crossed it still asks: with nobody to ask, a
	// write of a file direnv runs on the host is refused, naming the fix.
	res, err := sess.CallTool(ctx, &mcpsdk.CallToolParams{Name: "Write", Arguments: map[string]any{"file_path": filepath.Join(c.ws, ".envrc"), "content": "echo hi\n"}})
	must(t, err)
	if !res.IsError {
		t.Fatal("a write of .envrc ran with nobody to ask")
	}
	if _, err := os.Stat(filepath.Join(c.ws, ".envrc")); err == nil {
		t.Fatal("the refused write of .envrc happened")
	}

	// 6. diff --since the session shows what the session changed.
	var hist []struct {
		ID      string `json:"id"`
		Session string `json:"session"`
	}
	must(t, json.Unmarshal([]byte(run(bin, "history", "--json")), &hist))
	if len(hist) == 0 || hist[0].Session == "" {
		t.Fatalf("history has no session: %+v", hist)
	}
	diff := run(bin, "diff", "--since", "session:"+hist[0].Session, "--color", "never")
	if !strings.Contains(diff, "made-by-agent.txt") {
		t.Errorf("diff --since session:%s does not show the session's change:\n%s", hist[0].Session, diff)
	}
}
