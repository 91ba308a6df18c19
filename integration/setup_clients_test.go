//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real Claude Code and Gemini CLI from npm, installed once into a
// cache directory outside the repository. Versions are pinned so that a
// change of their config formats shows up as a deliberate bump.
const (
	claudeCodePkg = "@anthropic-ai/claude-code@2.1.197"
	geminiCLIPkg  = "@google/gemini-cli@0.61.0"
)

var (
	clientsOnce sync.Once
	clientsDir  string
	clientsErr  error
)

func agentClientsDir(t *testing.T) string {
	t.Helper()
	clientsOnce.Do(func() {
		if _, err := exec.LookPath("npm"); err != nil {
			clientsErr = fmt.Errorf("npm is required for the client checks (apt-get install nodejs npm): %v", err)
			return
		}
		clientsDir, clientsErr = testCacheDir("clients")
		if clientsErr != nil {
			return
		}
		stamp := filepath.Join(clientsDir, "installed")
		if b, _ := os.ReadFile(stamp); string(b) == claudeCodePkg+" "+geminiCLIPkg {
			return
		}
		if err := os.MkdirAll(clientsDir, 0o755); err != nil {
			clientsErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", clientsDir, claudeCodePkg, geminiCLIPkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			clientsErr = fmt.Errorf("npm install %s %s: %v\n%s", claudeCodePkg, geminiCLIPkg, err, out)
			return
		}
		clientsErr = os.WriteFile(stamp, []byte(claudeCodePkg+" "+geminiCLIPkg), 0o644)
	})
	if clientsErr != nil {
		t.Fatal(clientsErr)
	}
	return clientsDir
}

// clientEnv is a person's machine in miniature: an empty home, a project,
// and the engine reachable through DOCKER_HOST (so that the MCP server the
// client starts never starts an engine of its own under that home).
type clientEnv struct {
	home, ws string
	env      []string
}

func newClientEnv(t *testing.T) clientEnv {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := clientEnv{home: filepath.Join(base, "home"), ws: filepath.Join(base, "project")}
	for _, d := range []string{c.home, c.ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.env = append(os.Environ(), "HOME="+c.home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "XDG_CACHE_HOME=",
		"AGENTBOX_STATE_DIR="+filepath.Join(base, "state"), "DOCKER_HOST="+cli.DaemonHost(), "CI=true", "NO_COLOR=1")
	return c
}

// run runs name (from the npm cache, or agentbox) in the project.
func (c clientEnv) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := agentbox
	if name != "agentbox" {
		bin = filepath.Join(agentClientsDir(t), "node_modules", ".bin", name)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = c.ws, c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestSetupClaudeCode: the real Claude Code lists the server setup wrote
// and, for the user scope, connects to it (initialize over stdio) without
// a model. A project's .mcp.json server stays "pending approval" until a
// person trusts the folder in an interactive session: that step is
// Claude Code's and is checked here as such.
func TestSetupClaudeCode(t *testing.T) {
	agentClientsDir(t)
	t.Run("user", func(t *testing.T) {
		c := newClientEnv(t)
		c.run(t, "agentbox", "setup", "claude-code", "--user")
		out := c.run(t, "claude", "mcp", "list")
		if !strings.Contains(out, "agentbox: "+agentbox+" mcp") || !strings.Contains(out, "Connected") {
			t.Fatalf("claude mcp list:\n%s", out)
		}
	})
	t.Run("project", func(t *testing.T) {
		c := newClientEnv(t)
		c.run(t, "agentbox", "setup", "claude-code")
		out := c.run(t, "claude", "mcp", "list")
		if !strings.Contains(out, "agentbox: "+agentbox+" --workspace "+c.ws+" mcp") || !strings.Contains(out, "Pending approval") {
			t.Fatalf("claude mcp list:\n%s", out)
		}
		get := c.run(t, "claude", "mcp", "get", "agentbox")
		if !strings.Contains(get, "Project config") {
			t.Fatalf("claude mcp get agentbox:\n%s", get)
		}
	})
}

// TestSetupGeminiCLI: the real Gemini CLI connects to the server setup
// wrote once the person trusts the folder (Gemini CLI starts no server in
// an untrusted one, which is checked too).
func TestSetupGeminiCLI(t *testing.T) {
	agentClientsDir(t)
	c := newClientEnv(t)
	c.run(t, "agentbox", "setup", "gemini-cli")
	out := c.run(t, "gemini", "mcp", "list")
	if !strings.Contains(out, "agentbox: "+agentbox+" --workspace "+c.ws+" mcp") || !strings.Contains(out, "Disabled") {
		t.Fatalf("gemini mcp list in an untrusted folder:\n%s", out)
	}
	trust := fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, c.ws)
	if err := os.WriteFile(filepath.Join(c.home, ".gemini", "trustedFolders.json"), []byte(trust), 0o600); err != nil {
		t.Fatal(err)
	}
	out = c.run(t, "gemini", "mcp", "list")
	if !strings.Contains(out, "agentbox: "+agentbox+" --workspace "+c.ws+" mcp") || !strings.Contains(out, "Connected") {
		t.Fatalf("gemini mcp list in a trusted folder:\n%s", out)
	}
}
