package classifier

import (
	"strings"

	"github.com/agentbox/agentbox/config"
)

// Default caps. Hitting one makes the verdict at least dangerous.
const (
	DefaultMaxBytes    = 256 << 10
	DefaultMaxDepth    = 16
	DefaultMaxCommands = 1000
)

type options struct {
	maxBytes    int
	maxDepth    int
	maxCommands int
	// untrustedGit makes git read subcommands dangerous: repository config
	// (core.fsmonitor, diff.external, pager) can make them run programs.
	untrustedGit bool
	readOnly     [][]string // extra read-only argv prefixes
	dangerous    []string   // programs always dangerous (overrides read-only rules)
	forbidden    []string   // programs always forbidden
	secrets      []secretRule
}

var defaultOptions = options{
	maxBytes:    DefaultMaxBytes,
	maxDepth:    DefaultMaxDepth,
	maxCommands: DefaultMaxCommands,
	secrets:     defaultSecrets,
}

// Option configures Classify. Options are cheap to apply; build them once
// (for example with FromConfig) and reuse them.
type Option func(*options)

// WithReadOnly adds argv prefixes that are read_only with any further
// arguments, for example "kubectl get" or "terraform plan". Words are split
// on spaces. Forbidden detectors still apply.
func WithReadOnly(prefixes ...string) Option {
	var ps [][]string
	for _, p := range prefixes {
		if f := strings.Fields(p); len(f) > 0 {
			ps = append(ps, f)
		}
	}
	return func(o *options) { o.readOnly = append(o.readOnly[:len(o.readOnly):len(o.readOnly)], ps...) }
}

// WithDangerous names programs that are always at least dangerous, even
// where a built-in rule would call them read_only.
func WithDangerous(names ...string) Option {
	names = append([]string(nil), names...)
	return func(o *options) { o.dangerous = append(o.dangerous[:len(o.dangerous):len(o.dangerous)], names...) }
}

// WithForbidden names programs that are always forbidden.
func WithForbidden(names ...string) Option {
	names = append([]string(nil), names...)
	return func(o *options) { o.forbidden = append(o.forbidden[:len(o.forbidden):len(o.forbidden)], names...) }
}

// WithTrustedGit says whether the workspace's repository is trusted. When
// false, git read subcommands (status, log, diff, ...) are dangerous
// because the repository's config can make them run programs. Default
// true. Trust covers only git run in the workspace itself: git aimed at
// another repository (-C, --git-dir, --work-tree, GIT_DIR and other
// environment prefixes, any cd before git, submodule recursion) is always
// dangerous, since nested repositories are agent-writable.
func WithTrustedGit(trusted bool) Option {
	return func(o *options) { o.untrustedGit = !trusted }
}

// WithCaps sets the caps on command size in bytes, nesting depth
// (substitutions, bash -c bodies, compound commands) and number of simple
// commands. A value <= 0 keeps the default.
func WithCaps(maxBytes, maxDepth, maxCommands int) Option {
	return func(o *options) {
		if maxBytes > 0 {
			o.maxBytes = maxBytes
		}
		if maxDepth > 0 {
			o.maxDepth = maxDepth
		}
		if maxCommands > 0 {
			o.maxCommands = maxCommands
		}
	}
}

// FromConfig turns the classifier section of the configuration into one
// Option.
func FromConfig(c config.Classifier) Option {
	opts := []Option{
		WithReadOnly(c.ReadOnly...),
		WithDangerous(c.Dangerous...),
		WithForbidden(c.Forbidden...),
		WithTrustedGit(c.TrustGitReads),
		WithCaps(c.MaxBytes, c.MaxDepth, c.MaxCommands),
	}
	return func(o *options) {
		for _, fn := range opts {
			fn(o)
		}
	}
}
