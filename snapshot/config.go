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
// ([config.Protection]) over cfg's workspace, with the host-run closure
// ([config.Closure]) computed from the workspace when the returned
// function's first path is judged: once per call, at the moment of use.
func ProtectConfig(cfg *config.Config) func() ProtectFunc {
	return ProtectClosure(func() *config.Closure { return cfg.Closure(false) })
}

// ProtectClosure is [ProtectConfig] with the closure from get (a
// [config.ClosureCache]'s Get), asked once per call when its first path is
// judged.
func ProtectClosure(get func() *config.Closure) func() ProtectFunc {
	return func() ProtectFunc {
		c := onceClosure(get)
		return func(rel string) (string, bool) { return c().Match(rel) }
	}
}

// ContentConfig is the content judgement of cfg's protection
// ([config.Closure.Judge]): package.json while a hook runner is present,
// the todo lists of a half-done rebase or cherry-pick. A package.json is
// judged against the whole-tree closure (a nested repository's hook, an
// .envrc below the root that runs npm are runners too); other paths,
// whose judgement does not depend on what is present, use the shallow one.
func ContentConfig(cfg *config.Config) func() ContentFunc {
	return func() ContentFunc {
		shallow := onceClosure(func() *config.Closure { return cfg.Closure(true) })
		full := onceClosure(func() *config.Closure { return cfg.Closure(false) })
		return func(rel string) func(old, new []byte) (string, bool) {
			if path.Base(rel) == "package.json" {
				return full().Judge(rel)
			}
			return shallow().Judge(rel)
		}
	}
}

// ContentClosure is [ContentConfig] with the closure from get, asked once
// per call when its first path is judged.
func ContentClosure(get func() *config.Closure) func() ContentFunc {
	return func() ContentFunc {
		c := onceClosure(get)
		return func(rel string) func(old, new []byte) (string, bool) { return c().Judge(rel) }
	}
}

// onceClosure calls get on its first use and keeps the result.
func onceClosure(get func() *config.Closure) func() *config.Closure {
	var once sync.Once
	var c *config.Closure
	return func() *config.Closure {
		once.Do(func() { c = get() })
		return c
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
