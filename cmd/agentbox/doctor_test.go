package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
)

func TestDoctorStateDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir string) string
		status string
	}{
		{"private dir", func(t *testing.T, d string) string { p := filepath.Join(d, "s"); must(t, os.Mkdir(p, 0o700)); return p }, statusOK},
		{"missing, creatable", func(t *testing.T, d string) string { return filepath.Join(d, "a", "b") }, statusOK},
		{"others may write", func(t *testing.T, d string) string {
			p := filepath.Join(d, "s")
			must(t, os.Mkdir(p, 0o700))
			must(t, os.Chmod(p, 0o777))
			return p
		}, statusFail},
		{"a file", func(t *testing.T, d string) string {
			p := filepath.Join(d, "f")
			must(t, os.WriteFile(p, nil, 0o600))
			return p
		}, statusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.StateDir = tc.setup(t, t.TempDir())
			checks := checkStateDir(&cfg)
			worst := statusOK
			for _, c := range checks {
				if c.Status == statusFail {
					worst = statusFail
				}
				if c.Status != statusOK && c.Fix == "" {
					t.Errorf("%s: %s without a fix", c.Name, c.Status)
				}
			}
			if worst != tc.status {
				t.Errorf("checks = %+v, want %s", checks, tc.status)
			}
		})
	}
}

func TestDoctorMCP(t *testing.T) {
	for _, tc := range []struct {
		addr, token, nonInteractive string
		status                      string
	}{
		{"", "", "deny", statusOK},
		{"127.0.0.1:8787", "", "deny", statusOK},
		{"0.0.0.0:8787", "", "deny", statusFail},
		{"0.0.0.0:8787", "0123456789abcdef", "deny", statusOK},
		{"", "", "allow", statusWarn},
	} {
		cfg := config.Default()
		cfg.MCP.HTTPAddr, cfg.MCP.BearerToken, cfg.MCP.NonInteractive = tc.addr, tc.token, tc.nonInteractive
		if c := checkMCP(&cfg); c.Status != tc.status {
			t.Errorf("%+v: %+v, want %s", tc, c, tc.status)
		}
	}
}

func TestDoctorToolchains(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
		want   map[string]string // check name -> status
	}{
		{"auto limits", func(c *config.Config) {}, map[string]string{"limits": statusOK, "caches": ""}},
		{"fewer CPUs than the host", func(c *config.Config) { c.Sandbox.CPUs = 0.5 }, map[string]string{"limits": statusWarn}},
		{"identity off", func(c *config.Config) { c.Sandbox.GitIdentity = false }, map[string]string{"git identity": statusOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Workspace, cfg.StateDir = t.TempDir(), t.TempDir()
			tc.mutate(&cfg)
			got := map[string]check{}
			for _, c := range checkToolchains(&cfg) {
				got[c.Name] = c
				if c.Status != statusOK && c.Fix == "" {
					t.Errorf("%s: %s without a fix", c.Name, c.Status)
				}
			}
			for name, status := range tc.want {
				c, ok := got[name]
				if !ok {
					t.Errorf("no %s check in %+v", name, got)
				} else if status != "" && c.Status != status {
					t.Errorf("%s = %+v, want %s", name, c, status)
				}
			}
		})
	}
}

// TestDoctorRootOwnedWorkspace: doctor fails a workspace owned by root
// (sandboxed commands would run as root) and names both fixes; the
// operator's allow_root_workspace makes it pass.
func TestDoctorRootOwnedWorkspace(t *testing.T) {
	cfg := config.Default()
	cfg.Workspace = "/usr" // owned by root on every Linux
	c := checkWorkspace(&cfg)
	if c.Status != statusFail || !strings.Contains(c.Detail, "owned by root") ||
		!strings.Contains(c.Fix, "chown -R USER: /usr") || !strings.Contains(c.Fix, "sandbox.allow_root_workspace") {
		t.Fatalf("root-owned workspace: %+v", c)
	}
	cfg.Sandbox.AllowRootWorkspace = true
	if c := checkWorkspace(&cfg); c.Status == statusFail {
		t.Fatalf("with allow_root_workspace: %+v", c)
	}
}
