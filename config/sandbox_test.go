package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSandboxDefaultsValid(t *testing.T) {
	s := defaultSandbox()
	if err := s.validate(); err != nil {
		t.Fatal(err)
	}
	if s.DefaultTimeout != 2*time.Minute || s.MaxTimeout != 10*time.Minute || len(s.ProtectedPaths) != len(DefaultProtectedPaths) {
		t.Errorf("defaults %+v", s)
	}
}

func TestSandboxValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Sandbox)
		key    string
	}{
		{"empty image", func(s *Sandbox) { s.Image = " " }, "sandbox.image"},
		{"negative pool", func(s *Sandbox) { s.PoolSize = -1 }, "sandbox.pool_size"},
		{"max timeout over 10m", func(s *Sandbox) { s.MaxTimeout = 11 * time.Minute }, "sandbox.max_timeout"},
		{"default over max", func(s *Sandbox) { s.DefaultTimeout = 5 * time.Minute; s.MaxTimeout = time.Minute }, "sandbox.default_timeout"},
		{"tiny memory", func(s *Sandbox) { s.MemoryMB = 1 }, "sandbox.memory_mb"},
		{"negative cpus", func(s *Sandbox) { s.CPUs = -1 }, "sandbox.cpus"},
		{"negative build cache", func(s *Sandbox) { s.BuildCacheMaxMB = -1 }, "sandbox.build_cache_max_mb"},
		{"relative cache", func(s *Sandbox) { s.Caches = []string{"go/pkg/mod"} }, "sandbox.caches"},
		{"unknown cache kind", func(s *Sandbox) { s.Caches = []string{"-maven"} }, "sandbox.caches"},
		{"root cache", func(s *Sandbox) { s.Caches = []string{"/"} }, "sandbox.caches"},
		{"few pids", func(s *Sandbox) { s.PidsLimit = 1 }, "sandbox.pids_limit"},
		{"small output cap", func(s *Sandbox) { s.OutputCap = 10 }, "sandbox.output_cap"},
		{"bad passthrough", func(s *Sandbox) { s.EnvPassthrough = []string{"A=B"} }, "sandbox.env_passthrough"},
		{"absolute protected", func(s *Sandbox) { s.ProtectedPaths = []string{"/etc"} }, "sandbox.protected_paths"},
		{"escaping protected", func(s *Sandbox) { s.ProtectedPaths = []string{"a/../../x"} }, "sandbox.protected_paths"},
		{"dot protected", func(s *Sandbox) { s.ProtectedPaths = []string{"."} }, "sandbox.protected_paths"},
		{"relative init", func(s *Sandbox) { s.InitBinary = "bin/agentbox" }, "sandbox.init_binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaultSandbox()
			tt.mutate(&s)
			err := s.validate()
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("err = %v, want one naming %s", err, tt.key)
			}
		})
	}
}

func TestSandboxFromFileAndEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "sandbox:\n  pool_size: 4\n  default_timeout: 30s\n  protected_paths: [.git/hooks, .envrc]\n"
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{File: f, Getenv: env(map[string]string{
		"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": t.TempDir(), "AGENTBOX_SANDBOX_MEMORY_MB": "512",
	})})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sandbox
	if s.PoolSize != 4 || s.DefaultTimeout != 30*time.Second || s.MemoryMB != 512 || len(s.ProtectedPaths) != 2 || s.ProtectedPaths[1] != ".envrc" {
		t.Errorf("loaded %+v", s)
	}
	_, err = Load(LoadOptions{Getenv: env(map[string]string{
		"HOME": t.TempDir(), "AGENTBOX_WORKSPACE": t.TempDir(), "AGENTBOX_SANDBOX_MAX_TIMEOUT": "1h",
	})})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("max_timeout 1h: %v, want ErrInvalid", err)
	}
}

func TestSandboxAutoLimits(t *testing.T) {
	s := defaultSandbox()
	if s.CPUs != 0 || s.MemoryMB != 0 {
		t.Fatalf("defaults are not auto: cpus %v memory %v", s.CPUs, s.MemoryMB)
	}
	if got := s.EffectiveCPUs(); got != float64(runtime.NumCPU()) {
		t.Errorf("auto cpus = %v, want %d", got, runtime.NumCPU())
	}
	if got := s.EffectiveMemoryMB(); got < minAutoMemoryMB && got != hostMemoryMB() {
		t.Errorf("auto memory = %d", got)
	}
	s.CPUs, s.MemoryMB = 1.5, 300
	if s.EffectiveCPUs() != 1.5 || s.EffectiveMemoryMB() != 300 {
		t.Errorf("explicit limits not kept: %v %v", s.EffectiveCPUs(), s.EffectiveMemoryMB())
	}
	for _, tt := range []struct{ total, want int64 }{
		{0, 2048}, {1024, 1024}, {3000, 2048}, {8192, 4096}, {24105, 12052},
	} {
		if got := autoMemoryMB(tt.total); got != tt.want {
			t.Errorf("autoMemoryMB(%d) = %d, want %d", tt.total, got, tt.want)
		}
	}
	for _, e := range []string{"auto", "go", "-npm", "/var/cache/x"} {
		if err := validCacheEntry(e); err != nil {
			t.Errorf("%q: %v", e, err)
		}
	}
}

func TestClampTimeout(t *testing.T) {
	const def, max = 30 * time.Second, 5 * time.Minute
	tests := []struct {
		name                string
		requested, def, max time.Duration
		want                time.Duration
	}{
		{"requested", 10 * time.Second, def, max, 10 * time.Second},
		{"zero takes the default", 0, def, max, def},
		{"capped", time.Hour, def, max, max},
		{"default capped", 0, time.Hour, max, max},
		{"negative left for the caller", -time.Second, def, max, -time.Second},
		{"no default: config's", 0, 0, max, min(DefaultTimeout, max)},
		{"no cap: config's", time.Hour, def, 0, MaxTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClampTimeout(tt.requested, tt.def, tt.max); got != tt.want {
				t.Errorf("ClampTimeout(%v, %v, %v) = %v, want %v", tt.requested, tt.def, tt.max, got, tt.want)
			}
		})
	}
}
