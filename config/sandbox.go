package config

import (
	"fmt"

	"github.com/bmatcuk/doublestar/v4"
	"path"
	"regexp"
	"strings"
	"time"
)

// Sandbox is the "sandbox" section: the throwaway containers commands run
// in. Every limit has a safe default; network is always none and is not
// configurable.
type Sandbox struct {
	// Backend names the registered sandbox backend (sandbox.Register):
	// "docker" (any Docker Engine API endpoint, the default) or "podman"
	// (Podman's Docker-compatible API). User config only.
	Backend string `mapstructure:"backend" yaml:"backend"`
	// Runtime is the OCI runtime containers run under ("" = the engine's
	// default, runc; "runsc" = gVisor, registered with agentbox's private
	// engine by `agentbox engine start`). User config only.
	Runtime string `mapstructure:"runtime" yaml:"runtime"`
	// Image is the image commands run in: "agentbox/host" (host toolchain
	// bind-mounted read-only), "agentbox/minimal" (busybox) or any image
	// with /bin/sh.
	Image string `mapstructure:"image" yaml:"image"`
	// PoolSize is the number of pre-started containers kept ready per
	// workspace (0 disables the pool: every command waits for a start).
	PoolSize int `mapstructure:"pool_size" yaml:"pool_size"`
	// DefaultTimeout applies when a call sets none.
	DefaultTimeout time.Duration `mapstructure:"default_timeout" yaml:"default_timeout"`
	// MaxTimeout caps every timeout (at most 10m).
	MaxTimeout time.Duration `mapstructure:"max_timeout" yaml:"max_timeout"`
	// OutputCap is the bytes of each stream kept (head and tail).
	OutputCap int `mapstructure:"output_cap" yaml:"output_cap"`
	// MemoryMB is the container memory limit (swap included) in MiB.
	MemoryMB int64 `mapstructure:"memory_mb" yaml:"memory_mb"`
	// CPUs is the CPU limit (fractions allowed).
	CPUs float64 `mapstructure:"cpus" yaml:"cpus"`
	// PidsLimit bounds the number of processes and threads in a container.
	PidsLimit int64 `mapstructure:"pids_limit" yaml:"pids_limit"`
	// TmpSizeMB is the size of the private /tmp tmpfs (HOME lives there).
	TmpSizeMB int64 `mapstructure:"tmp_size_mb" yaml:"tmp_size_mb"`
	// NoFile is the open-files ulimit.
	NoFile int64 `mapstructure:"nofile" yaml:"nofile"`
	// FileSizeMB is the largest file a command may write (fsize ulimit).
	FileSizeMB int64 `mapstructure:"file_size_mb" yaml:"file_size_mb"`
	// NProc is the nproc ulimit (counted per uid; pids_limit is the real
	// per-container bound).
	NProc int64 `mapstructure:"nproc" yaml:"nproc"`
	// EnvPassthrough names host variables copied into the scrubbed
	// environment when set (PATH and HOME are never copied).
	EnvPassthrough []string `mapstructure:"env_passthrough" yaml:"env_passthrough"`
	// GitSafeConfig gives every git run in the sandbox overrides for each
	// configuration key that names a program, a hook or a command
	// (fsmonitor, hooks, pager, editor, credential helpers, gpg, ...), so
	// that a repository the agent wrote cannot make git run its code.
	// Only a user config may turn it off; a project config cannot set it.
	GitSafeConfig bool `mapstructure:"git_safe_config" yaml:"git_safe_config"`
	// ProtectedPaths are workspace paths a host program may execute or
	// load without a person deliberately running project code (editor,
	// direnv, agent and package-manager configs; git metadata is always
	// protected on top). gitignore-style: a name without a slash matches at
	// any depth, one with a slash from the workspace root; globs allowed.
	// Those that exist at the workspace root when a container starts are
	// mounted read-only in it; a change to any of them (created, modified,
	// deleted, at any depth) is reverted before the call returns unless
	// approved; Write/Edit of one asks. A project config may only add.
	ProtectedPaths []string `mapstructure:"protected_paths" yaml:"protected_paths"`
	// AllowRootWorkspace lets commands run as uid 0 (without capabilities)
	// when the workspace is owned by root. Off by default: agentbox then
	// refuses root-owned workspaces, since a uid-0 process is what turns
	// any reachable root-owned socket or file into host root. User config
	// only.
	AllowRootWorkspace bool `mapstructure:"allow_root_workspace" yaml:"allow_root_workspace"`
	// InitBinary is the static agentbox binary mounted as the container's
	// init; empty means the running executable.
	InitBinary string `mapstructure:"init_binary" yaml:"init_binary"`
}

func defaultSandbox() Sandbox {
	return Sandbox{
		Backend:        "docker",
		Image:          "agentbox/host",
		PoolSize:       2,
		DefaultTimeout: 2 * time.Minute,
		MaxTimeout:     10 * time.Minute,
		OutputCap:      1 << 20,
		MemoryMB:       2048,
		CPUs:           1,
		PidsLimit:      512,
		TmpSizeMB:      512,
		NoFile:         4096,
		FileSizeMB:     1024,
		NProc:          4096,
		EnvPassthrough: []string{},
		GitSafeConfig:  true,
		ProtectedPaths: append([]string(nil), DefaultProtectedPaths...),
	}
}

// backendName is the shape of a backend or runtime name.
var backendName = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,31}$`)

// maxSandboxTimeout is the hard ceiling on any command's timeout.
const maxSandboxTimeout = 10 * time.Minute

func (c *Sandbox) validate() error {
	if strings.TrimSpace(c.Image) == "" {
		return fmt.Errorf("sandbox.image: empty")
	}
	if !backendName.MatchString(c.Backend) {
		return fmt.Errorf("sandbox.backend: %q is not a backend name (docker, podman)", c.Backend)
	}
	if c.Runtime != "" && !backendName.MatchString(c.Runtime) {
		return fmt.Errorf("sandbox.runtime: %q is not a runtime name (runc, runsc)", c.Runtime)
	}
	checks := []struct {
		key string
		bad bool
		msg string
	}{
		{"sandbox.pool_size", c.PoolSize < 0 || c.PoolSize > 64, "must be 0..64"},
		{"sandbox.default_timeout", c.DefaultTimeout <= 0, "must be positive"},
		{"sandbox.max_timeout", c.MaxTimeout <= 0 || c.MaxTimeout > maxSandboxTimeout, "must be in (0, 10m]"},
		{"sandbox.default_timeout", c.DefaultTimeout > c.MaxTimeout, "must not exceed sandbox.max_timeout"},
		{"sandbox.output_cap", c.OutputCap < 1024 || c.OutputCap > 64<<20, "must be 1 KiB..64 MiB"},
		{"sandbox.memory_mb", c.MemoryMB < 16, "must be at least 16"},
		{"sandbox.cpus", c.CPUs <= 0 || c.CPUs > 1024, "must be positive"},
		{"sandbox.pids_limit", c.PidsLimit < 8, "must be at least 8"},
		{"sandbox.tmp_size_mb", c.TmpSizeMB < 1, "must be at least 1"},
		{"sandbox.nofile", c.NoFile < 64, "must be at least 64"},
		{"sandbox.file_size_mb", c.FileSizeMB < 1, "must be at least 1"},
		{"sandbox.nproc", c.NProc < 8, "must be at least 8"},
	}
	for _, ch := range checks {
		if ch.bad {
			return fmt.Errorf("%s: %s", ch.key, ch.msg)
		}
	}
	for _, k := range c.EnvPassthrough {
		if k == "" || strings.ContainsAny(k, "= \t\n\x00") {
			return fmt.Errorf("sandbox.env_passthrough: invalid variable name %q", k)
		}
	}
	for _, p := range c.ProtectedPaths {
		clean := path.Clean(p)
		if p == "" || path.IsAbs(p) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(p, 0) {
			return fmt.Errorf("sandbox.protected_paths: %q must be a relative path inside the workspace", p)
		}
		if !doublestar.ValidatePattern(p) {
			return fmt.Errorf("sandbox.protected_paths: %q is not a valid pattern", p)
		}
	}
	if c.InitBinary != "" && !path.IsAbs(c.InitBinary) {
		return fmt.Errorf("sandbox.init_binary: %q must be absolute", c.InitBinary)
	}
	return nil
}
