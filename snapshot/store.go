package snapshot

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
)

// Store is the snapshot store of one workspace. It is safe for concurrent
// use; every mutating operation takes the store lock.
type Store struct {
	dir       string // <stateDir>/snapshots
	workspace string // real path
	opts      options

	mu    sync.Mutex // guards idx between operations of this process
	idx   *index     // cached manifest of the last scan, nil until loaded
	idxID fileID     // identity of the index file idx was read from
	// idxHash is the SHA-256 of the index file idx was read from or
	// saved as (its manifest blob name when idxDelta holds no records).
	idxHash  string
	idxDelta deltaState // the delta file applied to idx (delta.go)

	bg sync.WaitGroup // retirePending, the flusher

	// lazy is the lazily committed calls waiting for the flusher
	// (flushLater); lazyIdle is closed when the flusher has nothing left
	// (nil while no flusher runs).
	lazyMu   sync.Mutex
	lazy     []lazyCommit
	lazyIdle chan struct{}

	// dirty is set when a blob of unknown origin (a dead process's) may
	// not be durable: the next sync is a whole syncfs.
	dirty atomic.Bool
	// unsynced lists blobs written since the last sync.
	syncMu   sync.Mutex
	unsynced []string

	// bud bounds what the operation holding the lock stores (nil: no
	// bound); added is the size of blobs written since the running size
	// was last updated (see limits.go).
	bud   atomic.Pointer[budget]
	added atomic.Int64

	cap *capture // change capture (incremental.go)

	live liveGuard // open background jobs of this process (jobguard.go)

	// updSpare is a copy of the manifest's map made in the background
	// after a file-scoped update saved it: the next one takes it instead
	// of copying the whole map while its caller waits (delta.go). Used
	// under the store lock.
	updSpare *spareMap
}

type options struct {
	log      *slog.Logger
	exclude  []string
	now      func() time.Time
	workers  int
	compress bool
	hooks    func(point string)     // test hook: called at named points
	callHook func(point, id string) // test hook: the same, with the call's record ID
	protect  func() ProtectFunc     // WithProtection
	content  func() ContentFunc     // WithContentProtection
	lockPoll time.Duration
	serial   bool // WithSerialCalls
	// fullIndex: every manifest update is a whole save (withFullIndexSaves).
	fullIndex bool
	// Limits (limits.go).
	maxCall   int64
	minFree   int64
	autoGC    int64
	freeSpace func(dir string) (int64, error)
	// Change capture (incremental.go).
	capture    string
	checkEvery int
	checkAfter time.Duration
}

// Option configures Open.
type Option func(*options)

// WithLogger sets the logger; by default the package logs nothing.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithExclude sets patterns of paths never recorded. A pattern without a
// slash matches a name at any depth (like ".cache"); one with a slash
// matches the workspace-relative path (like "build/out"); both use
// path.Match syntax, and a match on a directory excludes what is under it.
func WithExclude(patterns ...string) Option {
	return func(o *options) { o.exclude = append(o.exclude, patterns...) }
}

// WithClock injects the clock used for entry times and racy-mtime checks.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithCompression stores file content deflate-compressed (manifests
// always are): a smaller store for some CPU time on every write and
// restore.
func WithCompression(on bool) Option { return func(o *options) { o.compress = on } }

// WithWorkers sets how many goroutines scan and hash (default: GOMAXPROCS).
func WithWorkers(n int) Option { return func(o *options) { o.workers = n } }

// WithSerialCalls makes a whole-workspace call hold the store lock from
// Begin to Finish, as before concurrent calls existed: every other
// mutating call on the workspace (a Write, an undo) then waits for a
// running shell command. Off by default; it exists to measure the
// difference (`agentbox bench load`) and as a fallback.
func WithSerialCalls(on bool) Option { return func(o *options) { o.serial = on } }

// withHook is for crash tests: fn is called at named points.
func withHook(fn func(point string)) Option { return func(o *options) { o.hooks = fn } }

// withCallHook is for the concurrency property test: fn is called at
// named points of a call's work, with its record ID.
func withCallHook(fn func(point, id string)) Option { return func(o *options) { o.callHook = fn } }

// Open opens (creating if needed) the store of workspace under stateDir
// (the per-workspace state directory, outside the workspace).
func Open(ctx context.Context, stateDir, workspace string, opts ...Option) (*Store, error) {
	o := options{now: time.Now, workers: runtime.GOMAXPROCS(0), lockPoll: 5 * time.Millisecond, freeSpace: statfsFree,
		capture: CaptureScan, checkEvery: 100, checkAfter: 10 * time.Minute}
	for _, fn := range opts {
		fn(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.workers < 1 {
		o.workers = 1
	}
	for _, p := range o.exclude {
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("snapshot: exclude pattern %q: %w", p, err)
		}
	}
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return nil, fmt.Errorf("snapshot: workspace: %w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, fmt.Errorf("snapshot: workspace: %w", err)
	}
	if fi, err := os.Stat(real); err != nil {
		return nil, fmt.Errorf("snapshot: workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("snapshot: workspace %s is not a directory", workspace)
	}
	sd, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: state dir: %w", err)
	}
	if config.Within(sd, real) {
		return nil, fmt.Errorf("snapshot: state dir %s is inside the workspace %s", sd, real)
	}
	s := &Store{dir: filepath.Join(sd, "snapshots"), workspace: real, opts: o}
	for _, d := range []string{s.dir, s.path("objects"), s.path("journal"), s.path("tmp"), s.path("pending")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	// Recover anything a dead process left half done, unless someone
	// holds the lock right now (then the next lock does it).
	unlock, err := s.tryLock(ctx)
	if err != nil {
		return nil, err
	}
	if unlock != nil {
		unlock()
	}
	s.bg.Wait() // calls recovery completed are retired too
	s.startCapture()
	return s, nil
}

// Workspace returns the real path of the workspace.
func (s *Store) Workspace() string { return s.workspace }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close waits for the store's background work (retirePending) and
// releases what the store holds (the change capture's watcher). The store
// must not be used afterwards.
func (s *Store) Close() error {
	s.stopLive()
	s.bg.Wait()
	s.stopCapture()
	return nil
}

func (s *Store) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

func (s *Store) hook(point string) {
	if s.opts.hooks != nil {
		s.opts.hooks(point)
	}
}

// hookCall is hook for a point of call id's work.
func (s *Store) hookCall(point, id string) {
	s.hook(point)
	if s.opts.callHook != nil {
		s.opts.callHook(point, id)
	}
}

// fileID identifies a version of a file by inode and change time.
type fileID struct {
	ino   uint64
	ctime int64
	size  int64
}

func statID(name string) fileID {
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return fileID{}
	}
	return fileID{ino: st.Ino, ctime: st.Ctim.Nano(), size: st.Size}
}
