package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// copyTree copies src into dst, skipping .keep placeholders.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == ".keep" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeFiles lists the files below dir (relative, slash-separated).
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".keep" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out
}

// TestSetupGolden runs `agentbox setup` on real config files of each
// client's documented format (testdata/setup/CASE/in) and compares the
// result with testdata/setup/CASE/out ({{WS}} stands for the workspace,
// {{STATE}} for the state dir, set through AGENTBOX_STATE_DIR).
// Every key already there must survive, and a second run must change
// nothing.
func TestSetupGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata/setup")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata/setup", c.Name())
			argsb, err := os.ReadFile(filepath.Join(dir, "args"))
			if err != nil {
				t.Fatal(err)
			}
			base := t.TempDir()
			copyTree(t, filepath.Join(dir, "in"), base)
			home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
			must(t, os.MkdirAll(home, 0o755))
			must(t, os.MkdirAll(ws, 0o755))
			t.Setenv("HOME", home)
			state := filepath.Join(t.TempDir(), "state")
			t.Setenv("AGENTBOX_STATE_DIR", state)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
			t.Setenv("DOCKER_HOST", "")
			args := append([]string{"--workspace", ws, "setup", "--command", "agentbox"}, strings.Fields(string(argsb))...)

			before := treeFiles(t, base)
			dry, _, err := runCLI(t, append(args, "--dry-run")...)
			if err != nil {
				t.Fatal(err)
			}
			if after := treeFiles(t, base); len(after) != len(before) {
				t.Fatal("--dry-run wrote files")
			}
			for p, b := range before {
				if !bytes.Equal(treeFiles(t, base)[p], b) {
					t.Fatalf("--dry-run changed %s", p)
				}
			}
			diff, stderr, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v %s", err, stderr)
			}
			if diff != dry || !strings.Contains(diff, "+++ b"+base) {
				t.Fatalf("the diff printed differs from the dry run's, or is empty:\n%s\n---\n%s", diff, dry)
			}
			got := treeFiles(t, base)
			outDir := filepath.Join(dir, "out")
			if *update {
				must(t, os.RemoveAll(outDir))
				for p, b := range got {
					must(t, os.MkdirAll(filepath.Dir(filepath.Join(outDir, p)), 0o755))
					must(t, os.WriteFile(filepath.Join(outDir, p), bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(ws), []byte("{{WS}}")), []byte(state), []byte("{{STATE}}")), 0o644))
				}
			}
			want := treeFiles(t, outDir)
			if len(want) != len(got) {
				t.Errorf("files after setup: got %d, want %d", len(got), len(want))
			}
			for p, w := range want {
				w = bytes.ReplaceAll(w, []byte("{{WS}}"), []byte(ws))
				w = bytes.ReplaceAll(w, []byte("{{STATE}}"), []byte(state))
				if !bytes.Equal(got[p], w) {
					t.Errorf("%s:\n%s\nwant:\n%s", p, got[p], w)
				}
			}
			// Idempotent: a second run changes and prints nothing.
			again, stderr, err := runCLI(t, args...)
			if err != nil || again != "" || !strings.Contains(stderr, "already set up") {
				t.Fatalf("second run: %v %q %s", err, again, stderr)
			}
			for p, b := range got {
				if !bytes.Equal(treeFiles(t, base)[p], b) {
					t.Fatalf("second run changed %s", p)
				}
			}
		})
	}
}

func TestSetupRefuses(t *testing.T) {
	tests := []struct {
		name, client, file, content string
	}{
		{"invalid JSON", "claude-code", ".mcp.json", `{"mcpServers": {`},
		{"JSON with comments", "gemini-cli", ".gemini/settings.json", "{\n  // mine\n  \"theme\": \"x\"\n}"},
		{"mcpServers not an object", "cursor", ".cursor/mcp.json", `{"mcpServers": []}`},
		{"deny not a list", "claude-code", ".claude/settings.json", `{"permissions": {"deny": "Bash"}}`},
		{"TOML dotted features key", "codex", ".codex/config.toml", "features.shell_tool = true\n"},
		{"TOML inline server table", "codex", ".codex/config.toml", "mcp_servers = { agentbox = { command = \"x\" } }\n"},
		{"TOML env sub-table", "codex", ".codex/config.toml", "[mcp_servers.agentbox]\ncommand = \"x\"\n\n[mcp_servers.agentbox.env]\nA = \"1\"\n"},
		{"invalid TOML", "codex", ".codex/config.toml", "[features\n"},
		{"unknown client", "vim", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			t.Setenv("HOME", t.TempDir())
			t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
			t.Setenv("DOCKER_HOST", "unix:///run/docker.sock") // Codex gets it in an env table
			p := filepath.Join(ws, tt.file)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte(tt.content), 0o644))
			_, stderr, err := runCLI(t, "--workspace", ws, "setup", "--command", "agentbox", tt.client)
			if err == nil {
				t.Fatalf("setup accepted it (%s)", stderr)
			}
			if b, _ := os.ReadFile(p); string(b) != tt.content {
				t.Fatalf("the refused file was changed:\n%s", b)
			}
		})
	}
}

func TestSetupFollowsSymlinkAndKeepsMode(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	real := filepath.Join(t.TempDir(), "dotfiles-mcp.json")
	must(t, os.WriteFile(real, []byte(`{"theme": "x"}`), 0o600))
	must(t, os.Symlink(real, filepath.Join(ws, ".mcp.json")))
	if _, stderr, err := runCLI(t, "--workspace", ws, "setup", "--command", "agentbox", "claude-code"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if fi, err := os.Lstat(filepath.Join(ws, ".mcp.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	b, _ := os.ReadFile(real)
	fi, _ := os.Stat(real)
	if !strings.Contains(string(b), `"agentbox"`) || !strings.Contains(string(b), `"theme"`) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("target %o:\n%s", fi.Mode().Perm(), b)
	}
}

// TestSetupCodexScrubbedEnv: Codex starts MCP servers with a scrubbed
// environment (HOME and PATH, no AGENTBOX_* or XDG_* variable). The server
// setup writes for it must still find the person's state dir and config
// file: run with the written arguments and only HOME set, it loads both.
func TestSetupCodexScrubbedEnv(t *testing.T) {
	base := t.TempDir()
	home, ws, state := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "state")
	cfgFile := filepath.Join(base, "xdg", "agentbox", "config.yaml")
	for _, d := range []string{home, ws, filepath.Dir(cfgFile)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(cfgFile, []byte("tools:\n  mode: acceptEdits\n"), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("AGENTBOX_STATE_DIR", state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "xdg"))
	t.Setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock")
	for _, scope := range []string{"--project", "--user"} {
		t.Run(scope, func(t *testing.T) {
			if _, stderr, err := runCLI(t, "--workspace", ws, "setup", "--command", "agentbox", "codex", scope); err != nil {
				t.Fatalf("%v %s", err, stderr)
			}
			file := filepath.Join(ws, ".codex", "config.toml")
			if scope == "--user" {
				file = filepath.Join(home, ".codex", "config.toml")
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				MCPServers map[string]struct {
					Args []string
					Env  map[string]string
				} `toml:"mcp_servers"`
			}
			if err := toml.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			args := got.MCPServers["agentbox"].Args
			if h := got.MCPServers["agentbox"].Env["DOCKER_HOST"]; h != "unix:///run/user/1000/docker.sock" {
				t.Errorf("env.DOCKER_HOST = %q:\n%s", h, b)
			}
			if len(args) == 0 || args[len(args)-1] != "mcp" {
				t.Fatalf("args %q", args)
			}
			// The scrubbed environment Codex gives its servers.
			t.Setenv("AGENTBOX_STATE_DIR", "")
			t.Setenv("XDG_CONFIG_HOME", "")
			show := append(slices.Clone(args[:len(args)-1]), "config", "show", "--json")
			if scope == "--user" {
				show = append([]string{"--workspace", ws}, show...)
			}
			out, stderr, err := runCLI(t, show...)
			if err != nil {
				t.Fatalf("%v %s", err, stderr)
			}
			var cfg struct {
				Config struct {
					StateDir string `json:"state_dir"`
					Tools    struct {
						Mode string `json:"mode"`
					} `json:"tools"`
				} `json:"config"`
			}
			if err := json.Unmarshal([]byte(out), &cfg); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if cfg.Config.StateDir != state || cfg.Config.Tools.Mode != "acceptEdits" {
				t.Fatalf("with %q and a scrubbed environment the server has state dir %q and mode %q, want %q and acceptEdits", args, cfg.Config.StateDir, cfg.Config.Tools.Mode, state)
			}
			t.Setenv("AGENTBOX_STATE_DIR", state)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "xdg"))
		})
	}
}

// TestSetupUserFromHome: `setup --user` started in the home directory (the
// workspace is then the home, which holds the default state dir) works:
// the state dir moves outside the workspace and the output says so.
func TestSetupUserFromHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AGENTBOX_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	_, stderr, err := runCLI(t, "--workspace", home, "setup", "--command", "agentbox", "claude-code", "--user")
	if err != nil {
		t.Fatalf("setup --user from ~: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "inside the workspace "+home) || !strings.Contains(stderr, "keeps this workspace's state in ") {
		t.Fatalf("the output does not say where the state went:\n%s", stderr)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude.json")); err != nil || !strings.Contains(string(b), `"agentbox"`) {
		t.Fatalf("~/.claude.json: %v %s", err, b)
	}
}

// TestSetupNextSteps: setup tells the person what the client still asks
// of them; a dry run and a user setup that needs nothing more say nothing.
func TestSetupNextSteps(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for none
	}{
		{[]string{"claude-code"}, "trust the folder"},
		{[]string{"gemini-cli"}, `: "TRUST_FOLDER"} to ~/.gemini/trustedFolders.json`},
		{[]string{"codex"}, "only in a project you trust"},
		{[]string{"claude-code", "--user"}, ""},
		{[]string{"gemini-cli", "--dry-run"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ws := t.TempDir()
			t.Setenv("HOME", t.TempDir())
			t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
			_, stderr, err := runCLI(t, append([]string{"--workspace", ws, "setup", "--command", "agentbox"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(stderr, "agentbox setup: next: ")
			if tc.want == "" && has || tc.want != "" && !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr:\n%s", stderr)
			}
		})
	}
}

// TestCodexEditEnv: DOCKER_HOST joins the entry's env table, beside the
// person's own variables.
func TestCodexEditEnv(t *testing.T) {
	old := []byte("[mcp_servers.agentbox]\ncommand = \"x\"\nenv = { FOO = \"1\" }\n")
	out, err := codexEdit(old, "agentbox", []string{"mcp"}, map[string]string{"DOCKER_HOST": "unix:///d.sock"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]struct{ Env map[string]string } `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if env := got.MCPServers["agentbox"].Env; env["FOO"] != "1" || env["DOCKER_HOST"] != "unix:///d.sock" {
		t.Fatalf("env %v:\n%s", env, out)
	}
	again, err := codexEdit(out, "agentbox", []string{"mcp"}, map[string]string{"DOCKER_HOST": "unix:///d.sock"})
	if err != nil || string(again) != string(out) {
		t.Fatalf("second run: %v\n%s", err, again)
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
