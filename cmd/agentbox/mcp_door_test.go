package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
)

// TestMCPTokenCommand: `mcp token` prints the path only, --header the JSON
// a header helper returns, and rotate replaces the token.
func TestMCPTokenCommand(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	t.Setenv("AGENTBOX_STATE_DIR", state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("AGENTBOX_MCP_BEARER_TOKEN", "")
	// Run where a header helper may run: a directory holding the state
	// dir (a home directory), which is no valid workspace.
	t.Chdir(base)
	out, stderr, err := runCLI(t, "mcp", "token")
	if err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	path := frontdoor.KeyPath(state, "mcp")
	if strings.TrimSpace(out) != path {
		t.Fatalf("mcp token printed %q, want the path %s", out, path)
	}
	k, err := frontdoor.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := k.Token()
	out, _, err = runCLI(t, "mcp", "token", "--header")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h) != 1 || h["Authorization"] != "Bearer "+old {
		t.Fatalf("--header printed something else than the header object (%v)", err)
	}
	out, stderr, err = runCLI(t, "mcp", "token", "rotate")
	if err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if strings.Contains(out+stderr, old) {
		t.Error("rotate printed a token")
	}
	if err := k.Verify(old); err == nil {
		t.Error("the old token still verifies after rotate")
	}
	// With mcp.bearer_token set, that is the token and rotate refuses.
	t.Setenv("AGENTBOX_MCP_BEARER_TOKEN", "explicit-token-0123456789abcdef")
	if _, _, err := runCLI(t, "mcp", "token", "rotate"); err == nil || !strings.Contains(err.Error(), "mcp.bearer_token") {
		t.Errorf("rotate with an explicit token: %v", err)
	}
	out, _, _ = runCLI(t, "mcp", "token", "--header")
	if !strings.Contains(out, "Bearer explicit-token-0123456789abcdef") {
		t.Errorf("--header with an explicit token: %q", out)
	}
}

// TestMCPSocketRefusedInWorkspace: a socket in the workspace, even reached
// through a symlink, would let sandboxed commands (the workspace owner's
// uid) in; agentbox refuses to listen there and creates nothing there.
func TestMCPSocketRefusedInWorkspace(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Symlink(ws, filepath.Join(base, "link")))
	t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(base, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	for _, sock := range []string{filepath.Join(ws, "run", "mcp.sock"), filepath.Join(base, "link", "run", "mcp.sock")} {
		_, _, err := runCLI(t, "--workspace", ws, "mcp", "--socket", sock)
		if err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("--socket %s: %v", sock, err)
		}
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("the refused socket left %d entries in the workspace", len(entries))
	}
}

// TestMCPKeyHealth: doctor fails on a token file agentbox would refuse,
// and neither fails nor creates one when there is none.
func TestMCPKeyHealth(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cfg := &config.Config{StateDir: state}
	if err := mcpKeyHealth(cfg); err != nil {
		t.Fatalf("no token file: %v", err)
	}
	if _, err := os.Stat(frontdoor.KeyPath(state, mcpDoorName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the check created a token file")
	}
	k, err := frontdoor.Ensure(frontdoor.KeyPath(state, mcpDoorName))
	if err != nil {
		t.Fatal(err)
	}
	if c := checkMCP(cfg); c.Status != statusOK {
		t.Fatalf("healthy token file: %+v", c)
	}
	must(t, os.Chmod(k.Path(), 0o644))
	c := checkMCP(cfg)
	if c.Status != statusFail || !strings.Contains(c.Fix, "agentbox mcp token rotate") || !errors.Is(mcpKeyHealth(cfg), frontdoor.ErrInsecure) {
		t.Errorf("world-readable token file: %+v", c)
	}
}

// TestMCPBearerTokenInOpenConfigFile: mcp.bearer_token read from a config
// file other local users can read (a config.yaml made 0644 by an editor)
// is a token they know; the door refuses to open with it (and `mcp token
// --header` refuses to hand it out) until the file is private.
func TestMCPBearerTokenInOpenConfigFile(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	file := filepath.Join(base, "config", "agentbox", "config.yaml")
	must(t, os.MkdirAll(filepath.Dir(file), 0o755))
	const tok = "file-token-0123456789abcdef-0123456789"
	if err := os.WriteFile(file, []byte("mcp:\n  bearer_token: "+tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(file, 0o644))
	env := map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": filepath.Join(base, "state"), "XDG_CONFIG_HOME": filepath.Join(base, "config")}
	load := func() *config.Config {
		cfg, err := config.Load(config.LoadOptions{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MCP.BearerToken != tok {
			t.Fatalf("the config file's token was not read (source %s)", cfg.Source("mcp.bearer_token"))
		}
		return cfg
	}
	cfg := load()
	door, err := openMCPDoor(cfg, "127.0.0.1:0", "", nil)
	if err == nil {
		door.listener.Close()
		t.Fatal("the door opened with a token from a file every local user can read")
	}
	if !errors.Is(err, frontdoor.ErrInsecure) || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), file) {
		t.Errorf("err = %v; want ErrInsecure naming the file, not the token", err)
	}
	if _, err := mcpToken(cfg); !errors.Is(err, frontdoor.ErrInsecure) {
		t.Errorf("mcpToken: %v, want ErrInsecure", err)
	}
	if err := mcpKeyHealth(cfg); !errors.Is(err, frontdoor.ErrInsecure) {
		t.Errorf("doctor's check: %v, want ErrInsecure", err)
	}
	// Private again: the door opens.
	must(t, os.Chmod(file, 0o600))
	door, err = openMCPDoor(load(), "127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatalf("a private config file: %v", err)
	}
	door.listener.Close()
	// From the environment there is no file to check.
	env["AGENTBOX_MCP_BEARER_TOKEN"] = tok
	must(t, os.Chmod(file, 0o644))
	door, err = openMCPDoor(load(), "127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatalf("token from the environment: %v", err)
	}
	door.listener.Close()
}
