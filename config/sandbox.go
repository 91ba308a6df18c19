package config

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
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
	// workspace and flavour (read-write, read-only); up to two more that
	// served only writes are kept for writes. 0 disables the pool: every
	// command and write waits for a start.
	PoolSize int `mapstructure:"pool_size" yaml:"pool_size"`
	// DefaultTimeout applies when a call sets none.
	DefaultTimeout time.Duration `mapstructure:"default_timeout" yaml:"default_timeout"`
	// MaxTimeout caps every timeout (at most 10m).
	MaxTimeout time.Duration `mapstructure:"max_timeout" yaml:"max_timeout"`
	// OutputCap is the bytes of each stream kept (head and tail).
	OutputCap int `mapstructure:"output_cap" yaml:"output_cap"`
	// MemoryMB is the container memory limit (swap included) in MiB; 0
	// means half of the host's memory, at least 2048 (never more than the
	// host has).
	MemoryMB int64 `mapstructure:"memory_mb" yaml:"memory_mb"`
	// CPUs is the CPU limit (fractions allowed); 0 means every CPU of the
	// host (still a cgroup limit).
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
	// What these triggers run or load (the host-run closure: hook
	// scripts, files .envrc loads, package.json's hook-relevant keys, a
	// symlinked name's target) is protected on top, computed from the
	// workspace (config.Closure; docs/protected-paths.md).
	ProtectedPaths []string `mapstructure:"protected_paths" yaml:"protected_paths"`
	// AllowRootWorkspace lets commands run as uid 0 (without capabilities)
	// when the workspace is owned by root. Off by default: agentbox then
	// refuses root-owned workspaces, since a uid-0 process is what turns
	// any reachable root-owned socket or file into host root. User config
	// only.
	AllowRootWorkspace bool `mapstructure:"allow_root_workspace" yaml:"allow_root_workspace"`
	// Caches selects the host's dependency caches mounted read-only at
	// their own paths (Go module cache, cargo registry and git checkouts,
	// npm and pnpm content stores) with the environment that points the
	// tools at them offline. "auto" mounts every one detected in the
	// workspace owner's home; a kind ("go", "cargo", "npm", "pnpm") mounts
	// that one only; "-KIND" leaves a detected one out; an absolute path
	// adds a directory. Credentials never come along: only the cache
	// subdirectories are mounted, never a home, and paths holding secrets
	// (.ssh, .netrc, credentials files, …) are refused. [] mounts none.
	// User config only.
	Caches []string `mapstructure:"caches" yaml:"caches"`
	// BuildCacheMaxMB caps the persistent per-workspace build cache (Go's
	// GOCACHE, XDG_CACHE_HOME, pip and npm caches) kept in the state dir and
	// writable only by sandboxed commands; the least recently used files
	// are evicted beyond it. 0 turns the persistent build cache off
	// (every call starts cold).
	BuildCacheMaxMB int64 `mapstructure:"build_cache_max_mb" yaml:"build_cache_max_mb"`
	// GitIdentity passes the workspace owner's git user.name and
	// user.email (from their global git config, nothing else of it) as
	// GIT_AUTHOR_* and GIT_COMMITTER_*, so that commits in the sandbox are
	// theirs. A repository's own user.name/user.email still win.
	GitIdentity bool `mapstructure:"git_identity" yaml:"git_identity"`
	// InitBinary is the static agentbox binary mounted as the container's
	// init; empty means the running executable.
	InitBinary string `mapstructure:"init_binary" yaml:"init_binary"`
}

func defaultSandbox() Sandbox {
	return Sandbox{
		Backend:         "docker",
		Image:           "agentbox/host",
		PoolSize:        2,
		DefaultTimeout:  DefaultTimeout,
		MaxTimeout:      MaxTimeout,
		OutputCap:       1 << 20,
		MemoryMB:        0,
		CPUs:            0,
		PidsLimit:       512,
		TmpSizeMB:       512,
		NoFile:          4096,
		FileSizeMB:      1024,
		NProc:           4096,
		EnvPassthrough:  []string{},
		GitSafeConfig:   true,
		ProtectedPaths:  append([]string(nil), DefaultProtectedPaths...),
		Caches:          []string{CachesAuto},
		BuildCacheMaxMB: 4096,
		GitIdentity:     true,
	}
}

// backendName is the shape of a backend or runtime name.
var backendName = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,31}$`)

// The timeouts of commands, in one place for every layer: MaxTimeout is
// the hard ceiling on any command's timeout (sandbox.max_timeout may only
// lower it); DefaultTimeout is sandbox.default_timeout's default and what
// a layer without a config applies. ClampTimeout applies them.
const (
	MaxTimeout     = 10 * time.Minute
	DefaultTimeout = 2 * time.Minute
)

// ClampTimeout is the one timeout rule of every layer (the sandbox's
// Normalize, a sandboxed write, the Bash tool): requested, or def when
// requested is 0, capped at max. A def or max that is not positive stands
// for DefaultTimeout or MaxTimeout. A negative requested is returned as it
// is, for the caller to refuse.
func ClampTimeout(requested, def, max time.Duration) time.Duration {
	if requested < 0 {
		return requested
	}
	if def <= 0 {
		def = DefaultTimeout
	}
	if max <= 0 {
		max = MaxTimeout
	}
	if requested == 0 {
		requested = def
	}
	return min(requested, max)
}

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
		{"sandbox.max_timeout", c.MaxTimeout <= 0 || c.MaxTimeout > MaxTimeout, "must be in (0, 10m]"},
		{"sandbox.default_timeout", c.DefaultTimeout > c.MaxTimeout, "must not exceed sandbox.max_timeout"},
		{"sandbox.output_cap", c.OutputCap < 1024 || c.OutputCap > 64<<20, "must be 1 KiB..64 MiB"},
		{"sandbox.memory_mb", c.MemoryMB != 0 && c.MemoryMB < 16, "must be 0 (auto) or at least 16"},
		{"sandbox.cpus", c.CPUs < 0 || c.CPUs > 1024, "must be 0 (auto) or positive"},
		{"sandbox.build_cache_max_mb", c.BuildCacheMaxMB < 0, "must be 0 (off) or positive"},
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
	for _, e := range c.Caches {
		if err := validCacheEntry(e); err != nil {
			return fmt.Errorf("sandbox.caches: %v", err)
		}
	}
	if c.InitBinary != "" && !path.IsAbs(c.InitBinary) {
		return fmt.Errorf("sandbox.init_binary: %q must be absolute", c.InitBinary)
	}
	return nil
}

// CachesAuto is the sandbox.caches entry that mounts every detected cache.
const CachesAuto = "auto"

// cacheKinds are the dependency caches sandbox.caches can name.
var cacheKinds = []string{"go", "cargo", "npm", "pnpm"}

func validCacheEntry(e string) error {
	k := strings.TrimPrefix(e, "-")
	switch {
	case e == CachesAuto:
		return nil
	case strings.HasPrefix(e, "/"):
		if strings.ContainsRune(e, 0) || path.Clean(e) == "/" {
			return fmt.Errorf("%q is not a usable directory", e)
		}
		return nil
	}
	for _, kind := range cacheKinds {
		if k == kind {
			return nil
		}
	}
	return fmt.Errorf("%q: want %q, a kind (%s), -KIND or an absolute path", e, CachesAuto, strings.Join(cacheKinds, ", "))
}

// minAutoMemoryMB is the least memory "auto" gives a container.
const minAutoMemoryMB = 2048

// EffectiveCPUs is the CPU limit containers get: CPUs, or every CPU of
// the host when it is 0.
func (c *Sandbox) EffectiveCPUs() float64 {
	if c.CPUs > 0 {
		return c.CPUs
	}
	return float64(runtime.NumCPU())
}

// EffectiveMemoryMB is the memory limit containers get: MemoryMB, or
// when it is 0 half of the host's memory, at least 2048 MiB but never
// more than the host has.
func (c *Sandbox) EffectiveMemoryMB() int64 {
	if c.MemoryMB > 0 {
		return c.MemoryMB
	}
	return autoMemoryMB(hostMemoryMB())
}

func autoMemoryMB(total int64) int64 {
	if total <= 0 {
		return minAutoMemoryMB
	}
	return min(max(total/2, minAutoMemoryMB), total)
}

// hostMemoryMB reads MemTotal from /proc/meminfo; 0 when unknown.
func hostMemoryMB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemTotal" {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}
