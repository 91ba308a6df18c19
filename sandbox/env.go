package sandbox

import (
	"sort"
	"strings"
)

// Fixed parts of every command's environment.
const (
	// Path is the PATH every command gets.
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// Home is HOME: a directory in the container's private tmpfs.
	Home = "/tmp/home"
)

// baseEnv is the scrubbed environment; passthrough and Spec.Env come on top.
var baseEnv = []string{
	"PATH=" + Path,
	"HOME=" + Home,
	"TMPDIR=/tmp",
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_EDITOR=true",
	"EDITOR=true",
	"VISUAL=true",
	"DEBIAN_FRONTEND=noninteractive",
	"LANG=C.UTF-8",
	"NO_COLOR=1",
}

// fixedKeys may not be overridden by passthrough (they are what makes the
// environment predictable); Spec.Env may still set them explicitly.
var fixedKeys = map[string]bool{"PATH": true, "HOME": true}

// EnvOption changes what [Env] builds.
type EnvOption func(*envOptions)

type envOptions struct {
	gitUnsafe bool
	egress    []string // reserved entries applied last (WithEgress)
}

// WithGitSafeConfig turns the git overrides of [GitSafeEnv] on or off
// (config sandbox.git_safe_config). They are on unless an option turns
// them off.
func WithGitSafeConfig(on bool) EnvOption {
	return func(o *envOptions) { o.gitUnsafe = !on }
}

// Env builds a command's environment: the scrubbed base (with PATH set to
// path, or Path when ""), then the named
// passthrough variables taken from getenv when set (never PATH or HOME),
// then extra KEY=VALUE entries (later ones win), then [GitSafeEnv] unless
// WithGitSafeConfig(false) is given: its variables win over passthrough
// and extra, and command-scope git config given in passthrough or extra
// (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n) is kept ahead of
// it, so the overrides win for the same key (GIT_CONFIG_PARAMETERS is
// dropped: it would beat them). [WithEgress] entries come last of all. The
// result is sorted by key and has one
// entry per key.
func Env(path string, passthrough []string, getenv func(string) (string, bool), extra []string, opts ...EnvOption) []string {
	var o envOptions
	for _, opt := range opts {
		opt(&o)
	}
	m := map[string]string{}
	for _, kv := range baseEnv {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if path != "" {
		m["PATH"] = path
	}
	for _, k := range passthrough {
		if fixedKeys[k] || getenv == nil {
			continue
		}
		if v, ok := getenv(k); ok {
			m[k] = v
		}
	}
	for _, kv := range extra {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	if !o.gitUnsafe {
		applyGitSafe(m)
	}
	for _, kv := range o.egress {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
