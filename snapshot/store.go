package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
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
	// idxHash is the SHA-256 of idx's encoding (its manifest blob name).
	idxHash string

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
}

type options struct {
	log      *slog.Logger
	exclude  []string
	now      func() time.Time
	workers  int
	compress bool
	hooks    func(point string) // test hook: called at named points
	protect  func() ProtectFunc // WithProtection
	lockPoll time.Duration
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

// withHook is for crash tests: fn is called at named points.
func withHook(fn func(point string)) Option { return func(o *options) { o.hooks = fn } }

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
	if rel, err := filepath.Rel(real, sd); err == nil && filepath.IsLocal(rel) || sd == real {
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
	s.startCapture()
	return s, nil
}

// Workspace returns the real path of the workspace.
func (s *Store) Workspace() string { return s.workspace }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close releases resources held by the store (the change capture's
// watcher). The store must not be used afterwards.
func (s *Store) Close() error {
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

// tryLock is lock without waiting: it returns a nil func when the lock is
// held elsewhere.
func (s *Store) tryLock(ctx context.Context) (func(), error) {
	return s.lockWait(ctx, false)
}

// lock takes the store's exclusive lock, waiting until ctx is done, and
// then completes whatever a dead holder left pending.
func (s *Store) lock(ctx context.Context) (func(), error) {
	return s.lockWait(ctx, true)
}

func (s *Store) lockWait(ctx context.Context, wait bool) (func(), error) {
	f, err := os.OpenFile(s.path("lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot: lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("snapshot: lock: %w", err)
		}
		if !wait {
			f.Close()
			return nil, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("snapshot: waiting for the store lock: %w", context.Cause(ctx))
		case <-time.After(s.opts.lockPoll):
		}
	}
	unlock := func() {
		s.flushUsage()
		f.Close() // closing the descriptor releases the flock
	}
	if err := s.recover(ctx); err != nil {
		s.added.Store(0) // what a failed recovery wrote is recounted
		os.Remove(s.path("usage"))
		unlock()
		return nil, err
	}
	return unlock, nil
}

// syncStore makes every blob written so far durable: an fsync of each
// new blob and its directory when there are few, one syncfs when there are
// many (or when a dead process may have left some).
func (s *Store) syncStore() error {
	s.syncMu.Lock()
	files := s.unsynced
	s.unsynced = nil
	s.syncMu.Unlock()
	full := s.dirty.Swap(false)
	fail := func(err error) error {
		s.dirty.Store(true)
		return fmt.Errorf("snapshot: sync: %w", err)
	}
	if full || len(files) > 128 {
		f, err := os.Open(s.dir)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := unix.Syncfs(int(f.Fd())); err != nil {
			return fail(err)
		}
		return nil
	}
	// All at once: concurrent fsyncs share journal commits.
	dirs := map[string]bool{}
	all := append([]string(nil), files...)
	for _, name := range files {
		d := filepath.Dir(name)
		if !dirs[d] {
			dirs[d] = true
			all = append(all, d)
		}
	}
	errs := make(chan error, len(all))
	sem := make(chan struct{}, 16)
	for _, name := range all {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- fsyncPath(name)
		}()
	}
	var first error
	for range all {
		if err := <-errs; err != nil && first == nil && !errors.Is(err, os.ErrNotExist) {
			first = err
		}
	}
	if first != nil {
		return fail(first)
	}
	return nil
}

// noteUnsynced registers a file written without fsync for the next
// syncStore.
func (s *Store) noteUnsynced(name string) {
	s.syncMu.Lock()
	s.unsynced = append(s.unsynced, name)
	s.syncMu.Unlock()
}

func fsyncPath(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// writeFileAtomic writes data to name via a temporary file that is fsynced
// and renamed; the directory is fsynced too.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	return writeFileRename(name, data, perm, true)
}

// writeFileRename writes data to name via a temporary file and a rename,
// fsyncing both only if durable is set.
func writeFileRename(name string, data []byte, perm os.FileMode, durable bool) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(name)+"-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if atomicWriteHook != nil {
		atomicWriteHook()
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return err
	}
	ok = true
	if !durable {
		return nil
	}
	return syncDir(dir)
}

// atomicWriteHook is set by crash tests to die between write and rename.
var atomicWriteHook func()

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
