package main

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// result with testdata/setup/CASE/out ({{WS}} stands for the workspace).
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
			os.MkdirAll(home, 0o755)
			os.MkdirAll(ws, 0o755)
			t.Setenv("HOME", home)
			t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
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
				os.RemoveAll(outDir)
				for p, b := range got {
					os.MkdirAll(filepath.Dir(filepath.Join(outDir, p)), 0o755)
					os.WriteFile(filepath.Join(outDir, p), bytes.ReplaceAll(b, []byte(ws), []byte("{{WS}}")), 0o644)
				}
			}
			want := treeFiles(t, outDir)
			if len(want) != len(got) {
				t.Errorf("files after setup: got %d, want %d", len(got), len(want))
			}
			for p, w := range want {
				w = bytes.ReplaceAll(w, []byte("{{WS}}"), []byte(ws))
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
		{"invalid TOML", "codex", ".codex/config.toml", "[features\n"},
		{"unknown client", "vim", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			t.Setenv("HOME", t.TempDir())
			t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
			p := filepath.Join(ws, tt.file)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(tt.content), 0o644)
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
	os.WriteFile(real, []byte(`{"theme": "x"}`), 0o600)
	os.Symlink(real, filepath.Join(ws, ".mcp.json"))
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
