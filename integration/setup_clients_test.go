//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// agentClientsDir installs the pinned Claude Code and Gemini CLI once
// into the tests' cache and returns the npm prefix they are in.
func agentClientsDir(t *testing.T) string {
	t.Helper()
	return npmCache(t, "clients", claudeCodePkg, geminiCLIPkg)
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
	out, err := c.try(t, name, args...)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return out
}

// try is run for a command expected to fail: it returns the combined
// output and the error.
func (c clientEnv) try(t *testing.T, name string, args ...string) (string, error) {
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
	return string(out), err
}

// claudeLaunchWarnings starts the real Claude Code headless with no
// account: it loads every settings file, prints its warnings about them
// (a permission rule that names no tool, ...) and stops at the login
// check, before any network call. It returns the lines before that stop.
func claudeLaunchWarnings(t *testing.T, c clientEnv) string {
	t.Helper()
	out, err := c.try(t, "claude", "-p", "hello")
	if err == nil || !strings.Contains(out, "Not logged in") {
		t.Fatalf("claude -p without an account: %v\n%s", err, out)
	}
	return strings.TrimSpace(out[:strings.Index(out, "Not logged in")])
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
		if w := claudeLaunchWarnings(t, c); w != "" {
			t.Fatalf("Claude Code warns about the settings setup wrote:\n%s", w)
		}
		// The check sees a rule Claude Code does not know (as setup
		// wrote before: MultiEdit), so its silence above means something.
		settings := filepath.Join(c.home, ".claude", "settings.json")
		b, err := os.ReadFile(settings)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"mcp__agentbox__*"`, `"Bash"`, `"Read"`, `"Write"`, `"Edit"`, `"NotebookEdit"`, `"Glob"`, `"Grep"`, `"WebFetch"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("settings.json lacks %s:\n%s", want, b)
			}
		}
		bad := strings.Replace(string(b), `"Bash",`, `"Bash", "MultiEdit",`, 1)
		if err := os.WriteFile(settings, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if w := claudeLaunchWarnings(t, c); !strings.Contains(w, `"MultiEdit" matches no known tool`) {
			t.Fatalf("Claude Code did not warn about an unknown tool's rule:\n%s", w)
		}
		// A second setup removes the rule earlier versions wrote.
		c.run(t, "agentbox", "setup", "claude-code", "--user")
		if w := claudeLaunchWarnings(t, c); w != "" {
			t.Fatalf("after setup again, Claude Code warns:\n%s", w)
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
		// Until the person trusts the folder, Claude Code ignores the
		// project's allow rule and says so; that notice is the only one.
		w := claudeLaunchWarnings(t, c)
		if !strings.HasPrefix(w, "Ignoring 1 permissions.allow entry from .claude/settings.json: this workspace has not been trusted") || strings.Count(w, "\n") != 0 {
			t.Fatalf("Claude Code in an untrusted project:\n%s", w)
		}
		// Trusted (what Claude Code's trust dialog records), nothing.
		trust := fmt.Sprintf(`{"projects": {%q: {"hasTrustDialogAccepted": true}}}`, c.ws)
		if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(trust), 0o600); err != nil {
			t.Fatal(err)
		}
		if w := claudeLaunchWarnings(t, c); w != "" {
			t.Fatalf("Claude Code warns about the project settings setup wrote:\n%s", w)
		}
	})
}

// geminiLaunchWarnings starts the real Gemini CLI headless with no
// account: it loads its settings and the user's policy files, prints what
// it warns about (a deprecated key, a policy file error) and stops at the
// auth check, before any network call. It returns the lines before that.
func geminiLaunchWarnings(t *testing.T, c clientEnv) string {
	t.Helper()
	out, _ := c.try(t, "gemini", "-p", "hello")
	i := strings.Index(out, "Please set an Auth method")
	if i < 0 {
		t.Fatalf("gemini -p without an account:\n%s", out)
	}
	return strings.TrimSpace(out[:i])
}

// TestSetupGeminiCLI: the real Gemini CLI connects to the server setup
// wrote once the person trusts the folder (Gemini CLI starts no server in
// an untrusted one, which is checked too), and reads the settings and the
// policy file setup wrote without a warning.
func TestSetupGeminiCLI(t *testing.T) {
	agentClientsDir(t)
	t.Run("project", func(t *testing.T) {
		c := newClientEnv(t)
		// What setup wrote before: tools.exclude, which Gemini CLI 0.61
		// warns about at every launch. Setup removes it.
		old := `{"tools": {"exclude": ["run_shell_command", "write_file", "replace"]}}`
		os.MkdirAll(filepath.Join(c.ws, ".gemini"), 0o755)
		if err := os.WriteFile(filepath.Join(c.ws, ".gemini", "settings.json"), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		trust := fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, c.ws)
		os.MkdirAll(filepath.Join(c.home, ".gemini"), 0o755)
		if err := os.WriteFile(filepath.Join(c.home, ".gemini", "trustedFolders.json"), []byte(trust), 0o600); err != nil {
			t.Fatal(err)
		}
		if w := geminiLaunchWarnings(t, c); !strings.Contains(w, "tools.exclude in settings.json is deprecated") {
			t.Fatalf("Gemini CLI does not warn about the old settings:\n%s", w)
		}
		c.run(t, "agentbox", "setup", "gemini-cli")
		if w := geminiLaunchWarnings(t, c); w != "" {
			t.Fatalf("Gemini CLI warns about what setup wrote:\n%s", w)
		}
		out := c.run(t, "gemini", "mcp", "list")
		if !strings.Contains(out, "agentbox: "+agentbox+" --workspace "+c.ws+" mcp") || !strings.Contains(out, "Connected") {
			t.Fatalf("gemini mcp list in a trusted folder:\n%s", out)
		}
		// Untrusted, Gemini CLI starts no server.
		if err := os.WriteFile(filepath.Join(c.home, ".gemini", "trustedFolders.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		out = c.run(t, "gemini", "mcp", "list")
		if !strings.Contains(out, "agentbox: "+agentbox+" --workspace "+c.ws+" mcp") || !strings.Contains(out, "Disabled") {
			t.Fatalf("gemini mcp list in an untrusted folder:\n%s", out)
		}
	})
	t.Run("user", func(t *testing.T) {
		c := newClientEnv(t)
		c.run(t, "agentbox", "setup", "gemini-cli", "--user")
		if w := geminiLaunchWarnings(t, c); w != "" {
			t.Fatalf("Gemini CLI warns about what setup wrote:\n%s", w)
		}
		// Gemini CLI validates the user's policy files at launch: a broken
		// one is reported, so the silence above means ours is valid.
		policy := filepath.Join(c.home, ".gemini", "policies", "agentbox.toml")
		good, err := os.ReadFile(policy)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(policy, []byte(strings.Replace(string(good), "priority = 900", "priority = 5000", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if w := geminiLaunchWarnings(t, c); !strings.Contains(w, "Policy file error in agentbox.toml") {
			t.Fatalf("Gemini CLI did not report a broken policy file:\n%s", w)
		}
	})
}
