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
	// MaxBytes drops the oldest entries until the store is at most this
	// large (the current tree's content always stays); 0 means no limit.
	// It applies at `agentbox snapshots gc` and automatically: when the
	// store passes it after a call, the oldest entries are dropped until
	// it is under 90% of it.
	MaxBytes int64 `mapstructure:"max_bytes" yaml:"max_bytes"`
	// MaxCallBytes caps the new content one call may add to the store
	// (before compression). A call whose pre-images would pass it is
	// refused before it runs ("nothing was changed"); content a call wrote
	// past it is recorded by hash but not kept (it cannot be restored) and
	// the next call must store it or is refused. The first scan of a
	// workspace and checkpoints are not capped. 0 means no cap. Above
	// max_bytes (when set) it is max_bytes. A project config may lower it.
	MaxCallBytes int64 `mapstructure:"max_call_bytes" yaml:"max_call_bytes"`
	// MinFreeBytes refuses calls while the filesystem of the state dir has
	// less free space than this, and keeps a call's snapshot from taking
	// it below; 0 means no floor.
	MinFreeBytes int64 `mapstructure:"min_free_bytes" yaml:"min_free_bytes"`
	// SerialCalls makes a shell command (Bash, `agentbox exec`) hold the
	// workspace's snapshot lock for its whole run, as before concurrent
	// calls: a Write, Edit, undo or rollback on the workspace then waits
	// for a running command. By default a shell command holds it only
	// while its workspace is scanned before and after the run, so
	// file-scoped calls go on meanwhile (two shell commands on one
	// workspace still run one after the other). For comparison
	// (`agentbox bench load`) and as a fallback.
	SerialCalls bool `mapstructure:"serial_calls" yaml:"serial_calls"`
	// ChangeCapture is how a shell command's changes are found. "auto":
	// where agentbox runs with CAP_SYS_ADMIN (as root), a fanotify watch on
	// the workspace's filesystem reports which paths changed, and the scans
	// before and after a call look only at those (their cost follows the
	// change, not the tree); without the privilege, or whenever the watch
	// cannot vouch for a scan (queue overflow, another agentbox process
	// wrote the manifest, a mount inside the workspace), the whole tree is
	// walked. "scan": always walk the whole tree.
	ChangeCapture string `mapstructure:"change_capture" yaml:"change_capture"`
	// CaptureCheckEvery makes every this many incremental captures be
	// checked against a full scan (a mismatch is logged with the paths,
	// counted in `agentbox doctor`, and the full result is used); 0 turns
	// the count off.
	CaptureCheckEvery int `mapstructure:"capture_check_every" yaml:"capture_check_every"`
	// CaptureCheckInterval checks the next incremental capture against a
	// full scan once this long has passed since the last check; 0 turns
	// the timer off.
	CaptureCheckInterval time.Duration `mapstructure:"capture_check_interval" yaml:"capture_check_interval"`
}

func defaultSnapshot() Snapshot {
	return Snapshot{
		Exclude:   []string{},
		KeepCalls: 1000,
		MaxAge:    30 * 24 * time.Hour,
		MaxBytes:  4 << 30,
		// A quarter of max_bytes: one call can never push out most of the
		// history at once.
		MaxCallBytes:         1 << 30,
		MinFreeBytes:         1 << 30,
		ChangeCapture:        "auto",
		CaptureCheckEvery:    100,
		CaptureCheckInterval: 10 * time.Minute,
	}
}

func (c *Snapshot) validate() error {
	for _, p := range c.Exclude {
		if p == "" {
			return fmt.Errorf("snapshot.exclude: empty pattern")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("snapshot.exclude: pattern %q: %w", p, err)
		}
	}
	switch c.ChangeCapture {
	case "auto", "scan":
	default:
		return fmt.Errorf("snapshot.change_capture: %q is not auto or scan", c.ChangeCapture)
	}
	if c.CaptureCheckEvery < 0 || c.CaptureCheckInterval < 0 {
		return fmt.Errorf("snapshot.capture_check_every and capture_check_interval must not be negative")
	}
	if c.KeepCalls < 0 || c.MaxAge < 0 || c.MaxBytes < 0 || c.MaxCallBytes < 0 || c.MinFreeBytes < 0 {
		return fmt.Errorf("snapshot.keep_calls, max_age, max_bytes, max_call_bytes and min_free_bytes must not be negative")
	}
	return nil
}
