package snapshot

import (
	"context"

	"github.com/agentbox/agentbox/config"
)

// OpenConfig opens the store of cfg's workspace with the options of its
// snapshot section (excludes, compression); opts are applied after them.
func OpenConfig(ctx context.Context, cfg *config.Config, opts ...Option) (*Store, error) {
	base := []Option{WithExclude(cfg.Snapshot.Exclude...), WithCompression(cfg.Snapshot.Compress)}
	return Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace, append(base, opts...)...)
}

// Policy is the gc retention of cfg's snapshot section.
func Policy(cfg *config.Config) GCPolicy {
	return GCPolicy{KeepCalls: cfg.Snapshot.KeepCalls, MaxAge: cfg.Snapshot.MaxAge, MaxBytes: cfg.Snapshot.MaxBytes}
}
