package docker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
)

// Toolchain caches and identity of a workspace's containers.
//
// Every container (both flavours) gets, besides the workspace:
//   - each dependency cache of sandbox.caches read-only at its own path
//     (sandbox.DetectCaches: the owner's Go module cache, cargo registry
//     and git checkouts, npm and pnpm stores; never a home, never
//     credentials);
//   - the workspace's persistent build cache (cfg.WorkspaceStateDir()+
//     "/cache", owned by the workspace owner) read-write at
//     sandbox.BuildCacheDir, with GOCACHE, XDG_CACHE_HOME, PIP_CACHE_DIR
//     and npm's cache pointed into it; it is trimmed to
//     sandbox.build_cache_max_mb in the background after commands;
//   - the owner's git user.name and user.email as GIT_AUTHOR_* and
//     GIT_COMMITTER_* (unless the repository's own config sets them).
//
// Like every bind mount, these are opened once, pinned and verified by
// init (pin.go). A read-only container's workspace stays read-only; its
// build cache is writable (it is outside the workspace and only ever read
// by other sandboxed commands).

// BuildCacheSubdir is the build cache's directory in a workspace's state dir.
const BuildCacheSubdir = "cache"

// trimEvery bounds how often the build cache is trimmed after commands.
const trimEvery = time.Minute

// WithOwnerHome sets the workspace owner's home directory, where their
// dependency caches and git identity are looked up (by default the home
// of the owner's uid in /etc/passwd). For tests and for owners whose
// passwd entry is elsewhere.
func WithOwnerHome(home string) Option {
	return func(o *options) { o.ownerHome, o.ownerHomeSet = home, true }
}

// Toolchains is what a workspace's containers get of the owner's
// toolchain state: dependency caches, the build cache and the identity.
type Toolchains struct {
	UID, GID int
	// Home is the owner's home ("" when unknown).
	Home     string                 `json:"home"`
	Caches   []sandbox.DepCache     `json:"caches"`
	Skipped  []sandbox.SkippedCache `json:"skipped,omitempty"`
	Identity sandbox.GitIdentity    `json:"identity"`
	// BuildCache is nil when sandbox.build_cache_max_mb is 0.
	BuildCache *sandbox.BuildCache `json:"-"`
}

// PlanToolchains works out the Toolchains of cfg's workspace without
// touching anything (home "" looks the owner up in /etc/passwd).
func PlanToolchains(cfg *config.Config, home string) (*Toolchains, error) {
	fi, err := os.Stat(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%w: workspace: %w", sandbox.ErrUnsafeWorkspace, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%w: workspace owner unknown", sandbox.ErrUnsafeWorkspace)
	}
	return planToolchains(cfg, int(st.Uid), int(st.Gid), home, true), nil
}

func planToolchains(cfg *config.Config, uid, gid int, home string, lookup bool) *Toolchains {
	if home == "" && lookup {
		home = ownerHome(uid)
	}
	t := &Toolchains{UID: uid, GID: gid, Home: home}
	var getenv func(string) (string, bool)
	if os.Geteuid() == uid && home != "" && os.Getenv("HOME") == home {
		getenv = os.LookupEnv // agentbox runs as the owner: their own settings apply
	}
	t.Caches, t.Skipped = sandbox.DetectCaches(sandbox.CacheOptions{
		Entries: cfg.Sandbox.Caches, Home: home, UID: uid, Getenv: getenv,
		Workspace: cfg.Workspace, StateDir: cfg.StateDir, Denied: images.SecretPath,
	})
	if cfg.Sandbox.GitIdentity {
		t.Identity = sandbox.OwnerGitIdentity(home)
	}
	if cfg.Sandbox.BuildCacheMaxMB > 0 {
		t.BuildCache = &sandbox.BuildCache{Dir: filepath.Join(cfg.WorkspaceStateDir(), BuildCacheSubdir), MaxBytes: cfg.Sandbox.BuildCacheMaxMB << 20}
	}
	return t
}

// ownerHome is the home directory of uid in the user database, or "".
func ownerHome(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || !filepath.IsAbs(u.HomeDir) || u.HomeDir == "/" {
		return ""
	}
	return filepath.Clean(u.HomeDir)
}

// Env is the toolchain environment of every command (identity aside).
func (t *Toolchains) Env() []string {
	env := sandbox.ToolEnv(t.Caches, t.BuildCache != nil)
	if reg, git := t.cargoCaches(); t.BuildCache != nil && (reg != "" || git != "") {
		env = append(env, "CARGO_HOME="+sandbox.CargoHomeDir)
	}
	return env
}

// cargoCaches are the mounted cargo registry and git directories.
func (t *Toolchains) cargoCaches() (registry, git string) {
	for _, c := range t.Caches {
		if c.Kind != "cargo" {
			continue
		}
		switch filepath.Base(c.Path) {
		case "registry":
			registry = c.Path
		case "git":
			git = c.Path
		}
	}
	return registry, git
}

// setupToolchains plans the runner's toolchains and creates the build
// cache directory.
func (r *Runner) setupToolchains(cfg *config.Config, o options) error {
	home := o.ownerHome
	t := planToolchains(cfg, r.uid, r.gid, home, !o.ownerHomeSet)
	if t.BuildCache != nil {
		if err := t.BuildCache.Ensure(r.uid, r.gid); err != nil {
			return fmt.Errorf("%w: build cache: %w", sandbox.ErrUnavailable, err)
		}
		// Cargo takes locks in CARGO_HOME: give it a writable one in the
		// build cache whose registry and git lead to the read-only caches.
		if reg, git := t.cargoCaches(); reg != "" || git != "" {
			if err := t.BuildCache.LinkCargoHome(r.uid, r.gid, reg, git); err != nil {
				r.log.Warn("preparing CARGO_HOME in the build cache", "err", err)
			}
		}
	}
	for _, s := range t.Skipped {
		r.log.Info("dependency cache not mounted", "kind", s.Kind, "path", s.Path, "reason", s.Reason)
	}
	r.tc = t
	r.toolEnv = t.Env()
	r.trimLater() // a cache left over the cap since the last session
	return nil
}

// cacheSources opens the dependency caches (read-only) and the build
// cache (read-write) as bind sources.
func (r *Runner) cacheSources() ([]bindSource, error) {
	if r.tc == nil {
		return nil, nil
	}
	var out []bindSource
	for _, c := range r.tc.Caches {
		if c.InWorkspace {
			continue
		}
		f, err := unix.Open(c.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return out, fmt.Errorf("%w: opening the %s cache %s: %w", sandbox.ErrUnavailable, c.Kind, c.Path, err)
		}
		out = append(out, bindSource{target: c.Path, fd: os.NewFile(uintptr(f), c.Path), path: c.Path, ro: true})
	}
	if b := r.tc.BuildCache; b != nil {
		f, err := unix.Open(b.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return out, fmt.Errorf("%w: opening the build cache: %w", sandbox.ErrUnavailable, err)
		}
		out = append(out, bindSource{target: sandbox.BuildCacheDir, fd: os.NewFile(uintptr(f), b.Dir), path: b.Dir})
	}
	return out, nil
}

// commandEnv is the environment extras of one command: the toolchain
// environment, the owner's git identity (less what the repository sets
// itself), then the spec's own entries.
func (r *Runner) commandEnv(spec []string) []string {
	out := append([]string(nil), r.toolEnv...)
	if r.tc != nil && r.tc.Identity != (sandbox.GitIdentity{}) {
		out = append(out, r.tc.Identity.Env(r.repoIdentity())...)
	}
	return append(out, spec...)
}

// repoIdentity is user.name/user.email of the workspace repository's own
// config (.git/config beneath the workspace, never through a symlink).
func (r *Runner) repoIdentity() sandbox.GitIdentity {
	if r.wsFD == nil {
		return sandbox.GitIdentity{}
	}
	fd, err := unix.Openat2(int(r.wsFD.Fd()), ".git/config", &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return sandbox.GitIdentity{}
	}
	f := os.NewFile(uintptr(fd), ".git/config")
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return sandbox.GitIdentity{}
	}
	return sandbox.ParseGitUser(io.LimitReader(f, 1<<20))
}

// trimLater trims the build cache in the background when it is due.
func (r *Runner) trimLater() {
	if r.tc == nil || r.tc.BuildCache == nil {
		return
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		removed, ran, err := r.tc.BuildCache.TrimIfDue(trimEvery)
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			r.log.Warn("trimming the build cache", "err", err)
		case ran && removed.Files > 0:
			r.log.Info("build cache trimmed", "files", removed.Files, "bytes", removed.Bytes)
		}
	}()
}

// Toolchains reports the runner's caches and identity.
func (r *Runner) Toolchains() *Toolchains { return r.tc }
