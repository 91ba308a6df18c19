package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func loadWithProject(t *testing.T, user, project string) (*Config, error) {
	t.Helper()
	ws := t.TempDir()
	if project != "" {
		must(t, os.MkdirAll(filepath.Join(ws, ".agentbox"), 0o755))
		if err := os.WriteFile(filepath.Join(ws, ProjectFile), []byte(project), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := LoadOptions{Getenv: env(map[string]string{"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": ws})}
	if user != "" {
		f := filepath.Join(t.TempDir(), "user.yaml")
		must(t, os.WriteFile(f, []byte(user), 0o600))
		opts.File = f
	}
	return Load(opts)
}

func TestProjectKeysKnown(t *testing.T) {
	known := KnownKeys()
	for k := range projectKeys {
		if _, ok := known[k]; !ok {
			t.Errorf("project key %s is not a config key", k)
		}
	}
}

func TestProjectTightens(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		project string
		errHas  string
		check   func(t *testing.T, c *Config)
	}{
		{name: "no project file", check: func(t *testing.T, c *Config) {
			if c.Tools.Mode != "default" || c.Source("tools.mode") != "default" {
				t.Fatal(c.Tools.Mode, c.Source("tools.mode"))
			}
		}},
		{name: "add deny rules", user: "tools:\n  deny: ['Bash(curl:*)']\n", project: "tools:\n  deny: ['Edit(./vendor/**)', 'Bash(curl:*)']\n", check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Tools.Deny, []string{"Bash(curl:*)", "Edit(./vendor/**)"}) {
				t.Fatal(c.Tools.Deny)
			}
			if s := c.Source("tools.deny"); !strings.Contains(s, "user file") || !strings.Contains(s, "project") {
				t.Fatal(s)
			}
		}},
		{name: "stricter mode", project: "tools:\n  mode: plan\n", check: func(t *testing.T, c *Config) {
			if c.Tools.Mode != "plan" || !strings.HasPrefix(c.Source("tools.mode"), "project ") {
				t.Fatal(c.Tools.Mode, c.Source("tools.mode"))
			}
		}},
		{name: "looser mode", project: "tools:\n  mode: bypassPermissions\n", errHas: "looser"},
		{name: "looser than user mode", user: "tools:\n  mode: dontAsk\n", project: "tools:\n  mode: default\n", errHas: "user file"},
		{name: "allow rules refused", project: "tools:\n  allow: ['Bash']\n", errHas: "tools.allow cannot be set by a project config"},
		{name: "lower limit", project: "sandbox:\n  memory_mb: 128\n  default_timeout: 30s\n", check: func(t *testing.T, c *Config) {
			if c.Sandbox.MemoryMB != 128 || c.Sandbox.DefaultTimeout != 30*time.Second {
				t.Fatal(c.Sandbox.MemoryMB, c.Sandbox.DefaultTimeout)
			}
		}},
		{name: "higher limit", project: "sandbox:\n  memory_mb: 999999\n", errHas: "loosen"},
		{name: "zero is unlimited", project: "sandbox:\n  pids_limit: 0\n", errHas: "loosen"},
		{name: "image refused", project: "sandbox:\n  image: evil\n", errHas: "sandbox.image cannot be set"},
		{name: "read-only dirs refused", project: "tools:\n  read_only_dirs: ['/']\n", errHas: "cannot be set"},
		{name: "trust git refused", user: "classifier:\n  trust_git_reads: false\n", project: "classifier:\n  trust_git_reads: true\n", errHas: "loosen"},
		{name: "secrets default", check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Tools.Secrets, DefaultSecretPaths) {
				t.Fatal(c.Tools.Secrets)
			}
		}},
		{name: "user replaces secrets, project adds", user: "tools:\n  secrets: ['.env']\n", project: "tools:\n  secrets: ['*.secret']\n", check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Tools.Secrets, []string{".env", "*.secret"}) {
				t.Fatal(c.Tools.Secrets)
			}
		}},
		{name: "bad secret", user: "tools:\n  secrets: ['[']\n", errHas: "tools.secrets"},
		{name: "auto-allow off", project: "tools:\n  auto_allow_sandboxed: false\n", check: func(t *testing.T, c *Config) {
			if c.Tools.AutoAllowSandboxed {
				t.Fatal("a project could not turn auto_allow_sandboxed off")
			}
		}},
		{name: "auto-allow default on", check: func(t *testing.T, c *Config) {
			if !c.Tools.AutoAllowSandboxed || c.Source("tools.auto_allow_sandboxed") != "default" {
				t.Fatal(c.Tools.AutoAllowSandboxed, c.Source("tools.auto_allow_sandboxed"))
			}
		}},
		{name: "auto-allow on refused", user: "tools:\n  auto_allow_sandboxed: false\n", project: "tools:\n  auto_allow_sandboxed: true\n", errHas: "loosen"},
		{name: "unknown key", project: "tools:\n  nope: 1\n", errHas: `unknown key "tools.nope"`},
		{name: "bad yaml", project: "tools: [\n", errHas: "reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadWithProject(t, tt.user, tt.project)
			if tt.errHas != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestSourcesEnvAndFile(t *testing.T) {
	ws := t.TempDir()
	f := filepath.Join(t.TempDir(), "u.yaml")
	must(t, os.WriteFile(f, []byte("tools:\n  parallelism: 4\n"), 0o600))
	c, err := Load(LoadOptions{File: f, Getenv: env(map[string]string{"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": ws, "AGENTBOX_TOOLS_MAX_OUTPUT_BYTES": "5000"})})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source("tools.parallelism") != "user file "+f || c.Source("tools.max_output_bytes") != "env AGENTBOX_TOOLS_MAX_OUTPUT_BYTES" || c.Source("tools.mode") != "default" {
		t.Fatal(c.Sources)
	}
	if c.Tools.MaxOutputBytes != 5000 || c.Tools.Parallelism != 4 {
		t.Fatal(c.Tools)
	}
}
