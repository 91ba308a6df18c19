package config

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox/egress"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaultsAndStateDir(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	c, err := Load(LoadOptions{Getenv: env(map[string]string{"HOME": home, "AGENTBOX_WORKSPACE": ws})})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if c.Workspace != real {
		t.Errorf("workspace = %q, want %q", c.Workspace, real)
	}
	if want := filepath.Join(home, ".local", "state", "agentbox"); c.StateDir != want {
		t.Errorf("state dir = %q, want %q", c.StateDir, want)
	}
	if !strings.HasPrefix(c.WorkspaceStateDir(), c.StateDir+"/workspaces/") {
		t.Errorf("workspace state dir %q not under state dir", c.WorkspaceStateDir())
	}
}

func TestUnknownKeyNamed(t *testing.T) {
	ws := t.TempDir()
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("sandbox:\n  no_such_knob: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(LoadOptions{File: f, Getenv: env(map[string]string{"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": ws})})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "sandbox.no_such_knob") {
		t.Fatalf("err = %v, want ErrInvalid naming sandbox.no_such_knob", err)
	}
}

func TestStateDirInsideWorkspaceRefused(t *testing.T) {
	ws := t.TempDir()
	_, err := Load(LoadOptions{Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": filepath.Join(ws, ".state")})})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

// TestStateDirLinkedIntoWorkspaceRefused: a state dir whose path reaches
// the workspace through a symlink holds the token files and journals
// where sandboxed commands (the workspace owner's uid) read and write
// them; the lexical test alone misses it.
func TestStateDirLinkedIntoWorkspaceRefused(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Symlink(ws, filepath.Join(base, "link")))
	for _, sd := range []string{
		filepath.Join(base, "link", ".state"),          // not there yet
		filepath.Join(base, "link", "sub", "agentbox"), // deeper, not there yet
		filepath.Join(base, "link"),                    // the workspace itself
	} {
		_, err := Load(LoadOptions{Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": sd})})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("state dir %s: err = %v, want ErrInvalid", sd, err)
		}
	}
}

// TestUserConfigInsideWorkspaceRefused: a user config file (--config, or
// the default one through XDG_CONFIG_HOME) has every power, including
// mcp.bearer_token and mcp.http_addr; inside the workspace the agent can
// rewrite it (sandboxed commands run as the workspace owner), and the next
// start would serve with a token the agent chose. Only .agentbox/config.yaml,
// which may only tighten, belongs there.
func TestUserConfigInsideWorkspaceRefused(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, ".config", "agentbox"), 0o755))
	inWS := filepath.Join(ws, "agentbox.yaml")
	must(t, os.WriteFile(inWS, []byte("tools:\n  parallelism: 2\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(ws, ".config", "agentbox", "config.yaml"), []byte("tools:\n  parallelism: 2\n"), 0o600))
	must(t, os.Symlink(inWS, filepath.Join(base, "linked.yaml")))
	state := filepath.Join(base, "state")
	cases := []struct {
		name string
		opts LoadOptions
	}{
		{"--config in the workspace", LoadOptions{File: inWS, Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": state})}},
		{"--config linked into the workspace", LoadOptions{File: filepath.Join(base, "linked.yaml"), Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": state})}},
		{"XDG_CONFIG_HOME in the workspace", LoadOptions{Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": state, "XDG_CONFIG_HOME": filepath.Join(ws, ".config")})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "inside the workspace") {
				t.Errorf("err = %v, want ErrInvalid saying it is inside the workspace", err)
			}
		})
	}
	// Outside the workspace it loads.
	out := filepath.Join(base, "out.yaml")
	must(t, os.WriteFile(out, []byte("tools:\n  parallelism: 2\n"), 0o600))
	if _, err := Load(LoadOptions{File: out, Getenv: env(map[string]string{"AGENTBOX_WORKSPACE": ws, "AGENTBOX_STATE_DIR": state})}); err != nil {
		t.Errorf("a config outside the workspace: %v", err)
	}
}

func TestMissingWorkspace(t *testing.T) {
	_, err := Load(LoadOptions{Getenv: env(map[string]string{"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": "/nonexistent/ws"})})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

// TestInvalidKeepsCause: an invalid config is ErrInvalid and still the
// error that made it so, for errors.Is.
func TestInvalidKeepsCause(t *testing.T) {
	for _, tt := range []struct {
		name, user string
		cause      error
	}{
		{"bad network rule", "network:\n  allow: ['ex*ample.org']\n", egress.ErrBadRule},
		{"bad exclude pattern", "snapshot:\n  exclude: ['[']\n", path.ErrBadPattern},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadWithProject(t, tt.user, "")
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, tt.cause) {
				t.Fatalf("err = %v, want ErrInvalid wrapping %v", err, tt.cause)
			}
		})
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
