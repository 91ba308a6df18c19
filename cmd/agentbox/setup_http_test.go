package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// TestSetupHTTP: `setup CLIENT --http URL` turns an existing stdio entry
// into the client's own HTTP form with the bearer token (user files:
// the token, file made 0600; project files: a reference to a variable,
// never the token; Claude Code: a header helper), prints no token, and
// is idempotent.
func TestSetupHTTP(t *testing.T) {
	const url = "http://127.0.0.1:8787"
	const wantURL = url + "/mcp"
	cases := []struct {
		client string
		user   bool
		file   string // relative to home (user) or the workspace
		check  func(t *testing.T, b []byte, token, state string)
	}{
		{"claude-code", true, ".claude.json", checkClaude},
		{"claude-code", false, ".mcp.json", checkClaude},
		{"gemini-cli", true, ".gemini/settings.json", func(t *testing.T, b []byte, token, _ string) {
			e := jsonEntry(t, b)
			if e["httpUrl"] != wantURL || header(e) != "Bearer "+token {
				t.Errorf("entry %v", e)
			}
		}},
		{"gemini-cli", false, ".gemini/settings.json", func(t *testing.T, b []byte, _, _ string) {
			e := jsonEntry(t, b)
			if e["httpUrl"] != wantURL || header(e) != "Bearer ${AGENTBOX_MCP_TOKEN}" {
				t.Errorf("entry %v", e)
			}
		}},
		{"cursor", true, ".cursor/mcp.json", func(t *testing.T, b []byte, token, _ string) {
			e := jsonEntry(t, b)
			if e["url"] != wantURL || header(e) != "Bearer "+token {
				t.Errorf("entry %v", e)
			}
		}},
		{"cursor", false, ".cursor/mcp.json", func(t *testing.T, b []byte, _, _ string) {
			e := jsonEntry(t, b)
			if e["url"] != wantURL || header(e) != "Bearer ${env:AGENTBOX_MCP_TOKEN}" {
				t.Errorf("entry %v", e)
			}
		}},
		{"codex", true, ".codex/config.toml", checkCodex},
		{"codex", false, ".codex/config.toml", checkCodex},
	}
	for _, tc := range cases {
		scope := "--project"
		if tc.user {
			scope = "--user"
		}
		t.Run(tc.client+scope, func(t *testing.T) {
			base := t.TempDir()
			home, ws, state := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "state")
			must(t, os.MkdirAll(home, 0o755))
			must(t, os.MkdirAll(ws, 0o755))
			t.Setenv("HOME", home)
			t.Setenv("AGENTBOX_STATE_DIR", state)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
			args := []string{"--workspace", ws, "setup", "--command", "agentbox", tc.client, scope}
			if _, stderr, err := runCLI(t, args...); err != nil {
				t.Fatalf("stdio setup: %v %s", err, stderr)
			}
			args = append(args, "--http", url)
			out, stderr, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v %s", err, stderr)
			}
			k, err := frontdoor.Load(frontdoor.KeyPath(state, "mcp"))
			if err != nil {
				t.Fatal(err)
			}
			token, _ := k.Token()
			if strings.Contains(out+stderr, token) {
				t.Errorf("setup printed the token:\n%s\n%s", out, stderr)
			}
			p := filepath.Join(ws, tc.file)
			if tc.user {
				p = filepath.Join(home, tc.file)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"command"`) || strings.Contains(string(b), "command =") {
				t.Errorf("the stdio command is left next to the URL:\n%s", b)
			}
			tc.check(t, b, token, state)
			holdsToken := strings.Contains(string(b), token)
			if fi, _ := os.Stat(p); holdsToken && fi.Mode().Perm() != 0o600 {
				t.Errorf("%s holds the token with mode %#o", p, fi.Mode().Perm())
			}
			for f, c := range treeFiles(t, ws) {
				if strings.Contains(string(c), token) {
					t.Errorf("the project file %s holds the token", f)
				}
			}
			again, stderr, err := runCLI(t, args...)
			if err != nil || again != "" || !strings.Contains(stderr, "already set up") {
				t.Fatalf("second run: %v %q %s", err, again, stderr)
			}
		})
	}
}

func checkClaude(t *testing.T, b []byte, token, state string) {
	t.Helper()
	e := jsonEntry(t, b)
	h, _ := e["headersHelper"].(string)
	if e["type"] != "http" || e["url"] != "http://127.0.0.1:8787/mcp" || !strings.Contains(h, "--state-dir "+state) || !strings.HasSuffix(h, " mcp token --header") {
		t.Errorf("entry %v", e)
	}
	if strings.Contains(string(b), token) {
		t.Error("the Claude Code entry holds the token")
	}
}

func checkCodex(t *testing.T, b []byte, token, state string) {
	t.Helper()
	e := tomlEntry(t, b)
	h, _ := e["http_headers_helper"].(string)
	if e["url"] != "http://127.0.0.1:8787/mcp" || !strings.Contains(h, "--state-dir "+state) || !strings.HasSuffix(h, " mcp token --header") || e["http_headers"] != nil {
		t.Errorf("entry %v", e)
	}
	if strings.Contains(string(b), token) {
		t.Error("the Codex entry holds the token")
	}
}

func jsonEntry(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return doc.MCPServers["agentbox"]
}

func tomlEntry(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if strings.Contains(string(b), "command") {
		t.Errorf("codex entry keeps a command:\n%s", b)
	}
	return doc.MCPServers["agentbox"]
}

func header(e map[string]any) string {
	h, _ := e["headers"].(map[string]any)
	s, _ := h["Authorization"].(string)
	return s
}

// TestSetupHTTPUserFileLinkedIntoWorkspace: a --user config file that is
// a symlink (a dotfile manager's link) whose target lies in the workspace
// must not receive the literal token: sandboxed commands run as the
// workspace owner and read every file there, so the 0600 mode protects
// nothing. setup refuses and writes nothing with the token.
func TestSetupHTTPUserFileLinkedIntoWorkspace(t *testing.T) {
	for _, tc := range []struct {
		client, file string
		dirLink      bool // the client's directory is the link; no file yet
	}{
		{"gemini-cli", ".gemini/settings.json", false},
		{"cursor", ".cursor/mcp.json", false},
		{"gemini-cli", ".gemini/settings.json", true},
	} {
		t.Run(fmt.Sprintf("%s/dirlink=%v", tc.client, tc.dirLink), func(t *testing.T) {
			base := t.TempDir()
			home, ws, state := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "state")
			must(t, os.MkdirAll(home, 0o755))
			must(t, os.MkdirAll(filepath.Join(ws, "dotfiles"), 0o755))
			if tc.dirLink {
				if err := os.Symlink(filepath.Join(ws, "dotfiles"), filepath.Join(home, filepath.Dir(tc.file))); err != nil {
					t.Fatal(err)
				}
			} else {
				must(t, os.MkdirAll(filepath.Join(home, filepath.Dir(tc.file)), 0o755))
				target := filepath.Join(ws, "dotfiles", filepath.Base(tc.file))
				if err := os.WriteFile(target, []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(home, tc.file)); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("HOME", home)
			t.Setenv("AGENTBOX_STATE_DIR", state)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
			_, stderr, err := runCLI(t, "--workspace", ws, "setup", "--command", "agentbox", tc.client, "--user", "--http", "http://127.0.0.1:8787")
			k, kerr := frontdoor.Load(frontdoor.KeyPath(state, "mcp"))
			if kerr != nil {
				t.Fatal(kerr)
			}
			token, _ := k.Token()
			for f, c := range treeFiles(t, ws) {
				if strings.Contains(string(c), token) {
					t.Errorf("the workspace file %s holds the token (setup err %v)", f, err)
				}
			}
			if err == nil {
				t.Fatalf("setup wrote through a link into the workspace without an error:\n%s", stderr)
			}
			if !strings.Contains(err.Error(), "workspace") {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}

// TestSetupHTTPHelperConfigIsAbsolute: the header helper runs in whatever
// directory the client runs it from (the project); a relative --config in
// it would name a different file there, maybe one in the workspace.
func TestSetupHTTPHelperConfigIsAbsolute(t *testing.T) {
	base := t.TempDir()
	home, ws, state := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "state")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.MkdirAll(ws, 0o755))
	if err := os.WriteFile(filepath.Join(base, "my.yaml"), []byte("tools:\n  parallelism: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("AGENTBOX_STATE_DIR", state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Chdir(base)
	if _, stderr, err := runCLI(t, "--config", "my.yaml", "--workspace", ws, "setup", "--command", "agentbox", "claude-code", "--project", "--http", "http://127.0.0.1:8787"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := jsonEntry(t, b)["headersHelper"].(string)
	if !strings.Contains(h, "--config "+filepath.Join(base, "my.yaml")+" ") {
		t.Errorf("headersHelper %q does not name the config file by its absolute path", h)
	}
}

// TestSetupHTTPExplicitTokenNeverPrinted: setup prints diffs with tokens
// redacted; a mcp.bearer_token with characters a bearer token may not
// have (RFC 6750 b64token) escaped the redaction in part. Such a token is
// refused by the configuration, so no part of it is printed.
func TestSetupHTTPExplicitTokenNeverPrinted(t *testing.T) {
	base := t.TempDir()
	home, ws, state := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "state")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.MkdirAll(ws, 0o755))
	t.Setenv("HOME", home)
	t.Setenv("AGENTBOX_STATE_DIR", state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	const secret = "abc!SECRET-TAIL-0123456789-0123456789"
	t.Setenv("AGENTBOX_MCP_BEARER_TOKEN", secret)
	out, stderr, err := runCLI(t, "--workspace", ws, "setup", "--command", "agentbox", "gemini-cli", "--user", "--dry-run", "--http", "http://127.0.0.1:8787")
	if strings.Contains(out+stderr, "SECRET-TAIL") || (err != nil && strings.Contains(err.Error(), "SECRET-TAIL")) {
		t.Errorf("setup printed part of the token:\n%s\n%s", out, stderr)
	}
	if err == nil {
		t.Error("a bearer token with characters outside RFC 6750's b64token was accepted")
	}
}
