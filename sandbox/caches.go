package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/config"
)

// Dependency caches: the host's downloaded modules and packages, mounted
// read-only at their own paths so that builds and tests work offline.
//
// Only directories that hold dependencies are mounted (the Go module
// cache, ~/.cargo/registry and ~/.cargo/git, npm's _cacache, pnpm's
// store), never a home or a tool's config directory: ~/.cargo/credentials
// .toml, ~/.npmrc, ~/.netrc and pip's config stay out. A detected cache
// must belong to the workspace owner (a cache the owner could not read on
// the host is not shown to their commands either).

// DepCache is one dependency cache to mount read-only at Path (a real,
// absolute host path) in every container.
type DepCache struct {
	// Kind is "go", "cargo", "npm", "pnpm", or "path" for one configured
	// by path.
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Env points the tool at the cache, offline.
	Env []string `json:"env,omitempty"`
	// InWorkspace: the cache lies inside the workspace, which is mounted
	// already; it gets its environment but no mount of its own.
	InWorkspace bool `json:"in_workspace,omitempty"`
}

// SkippedCache is a cache that was found or configured but is not mounted.
type SkippedCache struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// CacheOptions says where to look and what to refuse.
type CacheOptions struct {
	// Entries is sandbox.caches: "auto", kinds, "-KIND", absolute paths.
	Entries []string
	// Home is the workspace owner's home directory ("" when unknown:
	// nothing is detected, configured paths still apply).
	Home string
	// UID is the workspace owner's uid: a detected cache must be theirs.
	UID int
	// Getenv, when set, is the owner's own environment (agentbox runs as
	// the owner): GOMODCACHE, GOPATH, CARGO_HOME, npm_config_cache and
	// XDG_DATA_HOME are honoured.
	Getenv func(string) (string, bool)
	// Workspace and StateDir may not lie inside a cache; a cache inside
	// the workspace is visible there already and is not mounted again.
	Workspace, StateDir string
	// Denied reports host paths that hold secrets (the host image's deny
	// list); nil denies nothing beyond the built-in rules.
	Denied func(string) bool
}

// credentialNames are files that, found at the top of a cache directory,
// mean it is a tool's home rather than a cache: it is refused.
var credentialNames = []string{
	"credentials", "credentials.toml", ".credentials.toml", ".npmrc", ".netrc", ".git-credentials",
	".pypirc", "pip.conf", "auth.json", ".env", ".ssh", ".gnupg", ".docker", ".aws",
}

// Environment each kind of cache gets; the path is appended where a key
// ends in "=" and names the cache itself.
func cacheEnv(kind, path string) []string {
	switch kind {
	case "go":
		// GOPROXY=off: nothing can be downloaded anyway (no network);
		// off makes a missing module a clear, immediate error.
		return []string{"GOMODCACHE=" + path, "GOPROXY=off"}
	case "cargo":
		return []string{"CARGO_NET_OFFLINE=true"}
	case "npm":
		// npm_config_cache is the directory holding _cacache.
		return []string{"npm_config_cache=" + filepath.Dir(path), "npm_config_offline=true"}
	case "pnpm":
		return []string{"npm_config_store_dir=" + path, "npm_config_offline=true"}
	}
	return nil
}

// DetectCaches resolves sandbox.caches for one workspace owner. It never
// fails: what cannot be mounted is listed in skipped with the reason.
// Safe for concurrent use.
func DetectCaches(o CacheOptions) (caches []DepCache, skipped []SkippedCache) {
	auto, only, off := false, map[string]bool{}, map[string]bool{}
	var paths []string
	for _, e := range o.Entries {
		switch {
		case e == "auto":
			auto = true
		case strings.HasPrefix(e, "/"):
			paths = append(paths, e)
		case strings.HasPrefix(e, "-"):
			off[e[1:]] = true
		default:
			only[e] = true
		}
	}
	var cands []DepCache
	if o.Home != "" {
		for _, c := range candidates(o) {
			if (auto || only[c.Kind]) && !off[c.Kind] {
				cands = append(cands, c)
			}
		}
	}
	seen := map[string]bool{}
	add := func(c DepCache, detected bool) {
		real, reason := checkCache(o, c.Path, detected)
		if reason == reasonInWorkspace {
			c.Path, c.Env, c.InWorkspace = real, cacheEnv(c.Kind, real), true
			caches = append(caches, c)
			return
		}
		if reason != "" {
			if !(detected && reason == reasonMissing) {
				skipped = append(skipped, SkippedCache{Kind: c.Kind, Path: c.Path, Reason: reason})
			}
			return
		}
		if seen[real] {
			return
		}
		for _, prev := range caches {
			if prev.InWorkspace {
				continue
			}
			if config.Within(real, prev.Path) || config.Within(prev.Path, real) {
				skipped = append(skipped, SkippedCache{Kind: c.Kind, Path: c.Path, Reason: "overlaps " + prev.Path})
				return
			}
		}
		seen[real] = true
		c.Path = real
		c.Env = cacheEnv(c.Kind, real)
		caches = append(caches, c)
	}
	for _, c := range cands {
		add(c, true)
	}
	for _, p := range paths {
		add(DepCache{Kind: guessKind(p), Path: p}, false)
	}
	return caches, skipped
}

// candidates are the places each kind keeps its dependencies for o.Home.
func candidates(o CacheOptions) []DepCache {
	env := func(k string) string {
		if o.Getenv == nil {
			return ""
		}
		v, _ := o.Getenv(k)
		return v
	}
	var out []DepCache
	// Go: $GOMODCACHE, else the first GOPATH entry + /pkg/mod, from the
	// owner's environment or go env file, else ~/go/pkg/mod.
	goEnv := readGoEnv(filepath.Join(o.Home, ".config", "go", "env"))
	gomod := firstOf(env("GOMODCACHE"), goEnv["GOMODCACHE"])
	if gomod == "" {
		gopath := firstOf(env("GOPATH"), goEnv["GOPATH"], filepath.Join(o.Home, "go"))
		gopath, _, _ = strings.Cut(gopath, string(filepath.ListSeparator))
		gomod = filepath.Join(gopath, "pkg", "mod")
	}
	out = append(out, DepCache{Kind: "go", Path: gomod})
	// Cargo: the registry and git checkouts only, never CARGO_HOME itself
	// (credentials.toml, config.toml live there).
	cargo := firstOf(env("CARGO_HOME"), filepath.Join(o.Home, ".cargo"))
	out = append(out, DepCache{Kind: "cargo", Path: filepath.Join(cargo, "registry")},
		DepCache{Kind: "cargo", Path: filepath.Join(cargo, "git")})
	// npm: the content-addressed _cacache only (not _logs, never ~/.npmrc).
	npm := firstOf(env("npm_config_cache"), filepath.Join(o.Home, ".npm"))
	out = append(out, DepCache{Kind: "npm", Path: filepath.Join(npm, "_cacache")})
	// pnpm: its content-addressable store.
	data := firstOf(env("XDG_DATA_HOME"), filepath.Join(o.Home, ".local", "share"))
	out = append(out, DepCache{Kind: "pnpm", Path: filepath.Join(data, "pnpm", "store")})
	return out
}

const (
	reasonMissing     = "does not exist"
	reasonInWorkspace = "inside the workspace, visible there already"
)

// checkCache returns the real path of a cache directory, or why it may
// not be mounted.
func checkCache(o CacheOptions, p string, detected bool) (string, string) {
	if !filepath.IsAbs(p) {
		return "", "not an absolute path"
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", reasonMissing
	}
	if err != nil {
		return "", err.Error()
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err.Error()
	}
	if !fi.IsDir() {
		return "", "not a directory"
	}
	for _, q := range []string{p, real} {
		if o.Denied != nil && o.Denied(q) {
			return "", "holds or lies below secrets (host mount deny list)"
		}
		switch {
		case q == "/":
			return "", "is the root directory"
		case o.Home != "" && config.Within(o.Home, q):
			return "", "is (or contains) the owner's home"
		case o.Workspace != "" && config.Within(q, o.Workspace) && q != o.Workspace:
			return real, reasonInWorkspace
		case o.Workspace != "" && config.Within(o.Workspace, q):
			return "", "contains the workspace"
		case o.StateDir != "" && (config.Within(o.StateDir, q) || config.Within(q, o.StateDir)):
			return "", "overlaps agentbox's state dir"
		}
	}
	for _, n := range credentialNames {
		if _, err := os.Lstat(filepath.Join(real, n)); err == nil {
			return "", "holds " + n + " (a tool's home, not a cache)"
		}
	}
	if detected {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != o.UID {
			return "", fmt.Sprintf("belongs to uid %d, not to the workspace owner (uid %d); add it to sandbox.caches to mount it anyway", st.Uid, o.UID)
		}
	}
	return real, ""
}

// readGoEnv reads the KEY=VALUE lines of a go env file (`go env -w`).
func readGoEnv(file string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && slices.Contains([]string{"GOMODCACHE", "GOPATH"}, k) {
			out[k] = v
		}
	}
	return out
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// guessKind recognises a configured cache directory by its layout, so
// that it gets its tool's environment; "path" when unknown.
func guessKind(p string) string {
	has := func(rel string) bool {
		_, err := os.Stat(filepath.Join(p, rel))
		return err == nil
	}
	base := filepath.Base(filepath.Clean(p))
	switch {
	case has("cache/download"):
		return "go"
	case base == "_cacache" && has("index-v5"):
		return "npm"
	case base == "registry" && (has("index") || has("cache")):
		return "cargo"
	case base == "git" && (has("checkouts") || has("db")):
		return "cargo"
	case base == "store" && (has("v3") || has("v10")):
		return "pnpm"
	}
	return "path"
}
