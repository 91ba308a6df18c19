package snapshot

import (
	"context"

	"github.com/agentbox/agentbox/config"
)

// OpenConfig opens the store of cfg's workspace with the options of its
// snapshot section (excludes, compression, per-call cap, free-space
// floor, automatic gc past max_bytes, serial calls, change capture);
// opts are applied after them. Close the store to stop its change
// capture's watcher.
func OpenConfig(ctx context.Context, cfg *config.Config, opts ...Option) (*Store, error) {
	base := []Option{WithExclude(cfg.Snapshot.Exclude...), WithCompression(cfg.Snapshot.Compress),
		WithMaxCallBytes(callCap(cfg.Snapshot.MaxCallBytes, cfg.Snapshot.MaxBytes)), WithMinFreeBytes(cfg.Snapshot.MinFreeBytes),
		WithAutoGC(GCPolicy{MaxBytes: cfg.Snapshot.MaxBytes}), WithSerialCalls(cfg.Snapshot.SerialCalls),
		WithProtection(ProtectConfig(cfg)),
		WithChangeCapture(cfg.Snapshot.ChangeCapture), WithCaptureCheck(cfg.Snapshot.CaptureCheckEvery, cfg.Snapshot.CaptureCheckInterval)}
	return Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace, append(base, opts...)...)
}

// Policy is the gc retention of cfg's snapshot section.
func Policy(cfg *config.Config) GCPolicy {
	return GCPolicy{KeepCalls: cfg.Snapshot.KeepCalls, MaxAge: cfg.Snapshot.MaxAge, MaxBytes: cfg.Snapshot.MaxBytes}
}

// ProtectConfig is the protection of cfg's sandbox section
// (config.Protection) over cfg's workspace. The git-directory test looks
// at the workspace itself, beneath it and without following symlinks.
func ProtectConfig(cfg *config.Config) func() ProtectFunc {
	prot := cfg.Sandbox.Protection()
	ws := cfg.Workspace
	return func() ProtectFunc {
		memo := map[string]bool{}
		isGitDir := func(dir string) bool {
			if v, ok := memo[dir]; ok {
				return v
			}
			v := false
			for _, name := range []string{"HEAD", "objects", "refs"} {
				if _, err := lstatBeneathPath(ws, dir+"/"+name); err == nil {
					v = true
					break
				}
			}
			memo[dir] = v
			return v
		}
		return func(rel string) (string, bool) { return prot.Match(rel, isGitDir) }
	}
}

// callCap is the per-call cap: max_call_bytes, but never above max_bytes
// (one call would otherwise push the whole history out).
func callCap(call, store int64) int64 {
	if store > 0 && (call <= 0 || call > store) {
		return store
	}
	return call
}
