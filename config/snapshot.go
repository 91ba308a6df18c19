package config

import (
	"fmt"
	"path"
	"time"
)

// Snapshot is the "snapshot" section: what is recorded before and after
// every mutating call, and how long it is kept.
type Snapshot struct {
	// Exclude lists paths never recorded (so never restored either). A
	// pattern without a slash matches a name at any depth (".cache"); one
	// with a slash matches the workspace-relative path ("build/out");
	// path.Match syntax. The default is empty: every file is recorded, so
	// no source file is ever silently left out. Add regenerable caches
	// (node_modules, target, .venv) here to make scans of huge trees cheaper.
	Exclude []string `mapstructure:"exclude" yaml:"exclude"`
	// Compress stores file content deflate-compressed: a store about a
	// quarter the size for source trees, for some CPU on every snapshot and
	// restore. Manifests and large journal entries are always compressed.
	Compress bool `mapstructure:"compress" yaml:"compress"`
	// KeepCalls is how many journal entries `agentbox snapshots gc` keeps
	// (newest first); 0 means no limit.
	KeepCalls int `mapstructure:"keep_calls" yaml:"keep_calls"`
	// MaxAge drops entries older than this at gc; 0 means no limit.
	MaxAge time.Duration `mapstructure:"max_age" yaml:"max_age"`
	// MaxBytes drops the oldest entries at gc until the store is at most
	// this large (the current tree's content always stays); 0 means no
	// limit.
	MaxBytes int64 `mapstructure:"max_bytes" yaml:"max_bytes"`
}

func defaultSnapshot() Snapshot {
	return Snapshot{
		Exclude:   []string{},
		KeepCalls: 1000,
		MaxAge:    30 * 24 * time.Hour,
		MaxBytes:  4 << 30,
	}
}

func (c *Snapshot) validate() error {
	for _, p := range c.Exclude {
		if p == "" {
			return fmt.Errorf("snapshot.exclude: empty pattern")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("snapshot.exclude: pattern %q: %v", p, err)
		}
	}
	if c.KeepCalls < 0 || c.MaxAge < 0 || c.MaxBytes < 0 {
		return fmt.Errorf("snapshot.keep_calls, max_age and max_bytes must not be negative")
	}
	return nil
}
