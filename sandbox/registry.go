package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/agentbox/agentbox/config"
)

// Opener opens a [Runner] of one backend for cfg (its workspace, its
// sandbox and network sections) with what the caller wires in (o): the
// host-side network hooks, the workspace's entry changes. log may be nil.
type Opener func(ctx context.Context, cfg *config.Config, log *slog.Logger, o OpenOptions) (Runner, error)

// OpenOptions is what the composition root wires into a backend.
type OpenOptions struct {
	// Network holds the host-side hooks of the egress proxy.
	Network Network
	// EntryChanges, when set, reports the workspace paths whose directory
	// entry was created, removed or moved in or out since its previous
	// call (path → it is a directory), so a backend can keep what it
	// derives from the tree (the unix sockets it masks) current without
	// walking it. It must report every change whose system call returned
	// before it was called; ok false means it cannot vouch for that (not
	// running yet, overflowed, stopped) and the backend walks the tree.
	EntryChanges func() (paths map[string]bool, ok bool)
}

// OpenOption sets an [OpenOptions] field.
type OpenOption func(*OpenOptions)

// WithEntryChanges sets [OpenOptions].EntryChanges.
func WithEntryChanges(f func() (map[string]bool, bool)) OpenOption {
	return func(o *OpenOptions) { o.EntryChanges = f }
}

// ErrUnknownBackend: sandbox.backend names no registered backend.
var ErrUnknownBackend = errors.New("unknown sandbox backend")

// DefaultBackend is the backend used when sandbox.backend is empty.
const DefaultBackend = "docker"

var registry struct {
	mu      sync.RWMutex
	openers map[string]Opener
}

// Register makes a backend available under name to [Open]. Backends call it
// from an init function, and the binary imports them for that side effect
// (as database/sql drivers do), so package sandbox imports no backend.
// Register panics when name is empty, opener nil, or name taken. It is
// safe for concurrent use.
func Register(name string, opener Opener) {
	if name == "" || opener == nil {
		panic("sandbox: Register with an empty name or a nil opener")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.openers == nil {
		registry.openers = map[string]Opener{}
	}
	if _, dup := registry.openers[name]; dup {
		panic("sandbox: backend " + name + " registered twice")
	}
	registry.openers[name] = opener
}

// Backends lists the registered backend names, sorted.
func Backends() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	out := make([]string, 0, len(registry.openers))
	for n := range registry.openers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// BackendName is the backend cfg selects (sandbox.backend, default
// [DefaultBackend]).
func BackendName(cfg *config.Config) string {
	if cfg.Sandbox.Backend == "" {
		return DefaultBackend
	}
	return cfg.Sandbox.Backend
}

// Open opens a [Runner] of the backend cfg selects. An unregistered name is
// an error wrapping [ErrUnknownBackend] and [ErrUnavailable] that lists the
// registered ones.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...OpenOption) (Runner, error) {
	name := BackendName(cfg)
	registry.mu.RLock()
	opener := registry.openers[name]
	registry.mu.RUnlock()
	if opener == nil {
		return nil, fmt.Errorf("%w: %w: sandbox.backend %q (registered: %v)", ErrUnavailable, ErrUnknownBackend, name, Backends())
	}
	var o OpenOptions
	for _, opt := range opts {
		opt(&o)
	}
	return opener(ctx, cfg, log, o)
}
