package snapshot

import (
	"context"
	"path"
	"sync"

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
		WithProtection(ProtectConfig(cfg)), WithContentProtection(ContentConfig(cfg)),
		WithChangeCapture(cfg.Snapshot.ChangeCapture), WithCaptureCheck(cfg.Snapshot.CaptureCheckEvery, cfg.Snapshot.CaptureCheckInterval)}
	return Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace, append(base, opts...)...)
}

// Policy is the gc retention of cfg's snapshot section.
func Policy(cfg *config.Config) GCPolicy {
	return GCPolicy{KeepCalls: cfg.Snapshot.KeepCalls, MaxAge: cfg.Snapshot.MaxAge, MaxBytes: cfg.Snapshot.MaxBytes}
}

// ProtectConfig is the protection of cfg's sandbox section
// (config.Protection) over cfg's workspace, with the host-run closure
// (config.Closure) computed from the workspace when the returned
// function's first path is judged: once per call, at the moment of use.
func ProtectConfig(cfg *config.Config) func() ProtectFunc {
	return func() ProtectFunc {
		var once sync.Once
		var c *config.Closure
		return func(rel string) (string, bool) {
			once.Do(func() { c = cfg.Closure(false) })
			return c.Match(rel)
		}
	}
}

// ContentConfig is the content judgement of cfg's protection
// (config.Closure.Judge): package.json while a hook runner is present,
// the todo lists of a half-done rebase or cherry-pick. A package.json is
// judged against the whole-tree closure (a nested repository's hook, an
// .envrc below the root that runs npm are runners too); other paths,
// whose judgement does not depend on what is present, use the shallow one.
func ContentConfig(cfg *config.Config) func() ContentFunc {
	return func() ContentFunc {
		var shallowOnce, fullOnce sync.Once
		var shallow, full *config.Closure
		return func(rel string) func(old, new []byte) (string, bool) {
			if path.Base(rel) == "package.json" {
				fullOnce.Do(func() { full = cfg.Closure(false) })
				return full.Judge(rel)
			}
			shallowOnce.Do(func() { shallow = cfg.Closure(true) })
			return shallow.Judge(rel)
		}
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
