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

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/atomicfile"
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

// syncStore makes every blob written so far durable: an fsync of each
// new blob and its directory when there are few, one syncfs when there are
// many (or when a dead process may have left some).
func (s *Store) syncStore() error {
	files := s.takeUnsynced()
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
	if err := fsyncAll(files); err != nil {
		return fail(err)
	}
	return nil
}

// fsyncAll fsyncs files and their directories, all at once: concurrent
// fsyncs share journal commits. A new directory is listed itself (its
// name in its parent must be durable too); each path is synced once; a
// file gone meanwhile (GC) is no error.
func fsyncAll(files []string) error {
	seen := map[string]bool{}
	var all []string
	for _, name := range files {
		for _, p := range []string{name, filepath.Dir(name)} {
			if !seen[p] {
				seen[p] = true
				all = append(all, p)
			}
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
	return first
}

// takeUnsynced takes the list of files written without fsync: the
// caller makes them durable (or gives them back with returnUnsynced).
func (s *Store) takeUnsynced() []string {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	files := s.unsynced
	s.unsynced = nil
	return files
}

// returnUnsynced gives files back to the next syncStore.
func (s *Store) returnUnsynced(files []string) {
	s.syncMu.Lock()
	s.unsynced = append(s.unsynced, files...)
	s.syncMu.Unlock()
}

// lazyCommit is a call whose entry commitLazyEntry renamed into place
// without waiting for the disk.
type lazyCommit struct {
	id    string
	entry string   // the entry's file
	deps  []string // blobs and manifest written for it, not yet synced
}

// flushLater hands a lazily committed call to the flusher, a background
// goroutine that makes its entry and what the entry depends on durable
// (all the calls waiting at that moment at once: concurrent fsyncs share
// the disk's journal commits), with the journal directory, and only then
// removes the calls' pending records. If a flush fails the records stay,
// and the next lock's recovery completes them (recover).
func (s *Store) flushLater(lc lazyCommit) {
	s.lazyMu.Lock()
	defer s.lazyMu.Unlock()
	s.lazy = append(s.lazy, lc)
	if s.lazyIdle == nil {
		s.lazyIdle = make(chan struct{})
		s.bg.Add(1)
		go s.flushLoop(s.lazyIdle)
	}
}

func (s *Store) flushLoop(idle chan struct{}) {
	defer s.bg.Done()
	for {
		s.lazyMu.Lock()
		batch := s.lazy
		s.lazy = nil
		if len(batch) == 0 {
			s.lazyIdle = nil
			close(idle)
			s.lazyMu.Unlock()
			return
		}
		s.lazyMu.Unlock()
		s.hook("lazy-flush")
		var files []string
		for _, lc := range batch {
			files = append(files, lc.entry)
			files = append(files, lc.deps...)
		}
		// fsyncAll syncs each file's directory too: the journal
		// directory, which makes the entries' names durable.
		if err := fsyncAll(files); err != nil {
			s.opts.log.Warn("snapshot: making journal entries durable; recovery completes them at the next lock", "err", err)
			s.dirty.Store(true)
			continue
		}
		for _, lc := range batch {
			if err := s.removePending(lc.id); err != nil {
				s.opts.log.Warn("snapshot: removing a pending record", "call", lc.id, "err", err)
			}
		}
	}
}

// waitFlushed waits until the flusher has nothing left.
func (s *Store) waitFlushed() {
	s.lazyMu.Lock()
	idle := s.lazyIdle
	s.lazyMu.Unlock()
	if idle != nil {
		<-idle
	}
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

// writeFileRename writes data to name via a temporary file and a rename
// (atomicfile), fsyncing both only if durable is set.
func writeFileRename(name string, data []byte, perm os.FileMode, durable bool) error {
	f, err := atomicfile.Create(filepath.Dir(name), filepath.Base(name))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if atomicWriteHook != nil {
		atomicWriteHook()
	}
	if durable {
		return f.Commit(name, perm)
	}
	return f.CommitNoSync(name, perm)
}

// writeFileAtomicWith is writeFileAtomic with work that must be durable
// before name's new content is (syncStore: the blobs an entry references)
// run concurrently with the temporary file's fsync: both end before the
// rename, which stays the commit point, so the order a crash can observe
// is unchanged and the two flushes share one wait for the disk.
func writeFileAtomicWith(name string, data []byte, perm os.FileMode, also func() error) error {
	if err := writeFileRenameWith(name, data, perm, also); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// writeFileRenameWith is writeFileAtomicWith without the fsync of the
// directory after the rename: the caller makes the new name durable.
func writeFileRenameWith(name string, data []byte, perm os.FileMode, also func() error) error {
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
	alsoErr := make(chan error, 1)
	go func() { alsoErr <- also() }()
	err = f.Sync()
	if aerr := <-alsoErr; aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return err
	}
	ok = true
	return nil
}

// retirePending removes the pending record of call id, whose entry
// commitCallEntry renamed into place, once the journal directory is
// fsynced (so that the record cannot vanish in a power loss while the
// entry's name does): in the background, after the call returned. If it
// never happens (the process dies, the fsync fails), recovery finds the
// record beside its entry and does the same.
func (s *Store) retirePending(id string) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if err := syncDir(s.path("journal")); err != nil {
			s.opts.log.Warn("snapshot: syncing the journal", "call", id, "err", err)
			return
		}
		if err := s.removePending(id); err != nil {
			s.opts.log.Warn("snapshot: removing a pending record", "call", id, "err", err)
		}
	}()
}

// writeFileNew writes a file that must not exist yet (a new pending
// record): complete under a temporary name, renamed into place, then the
// file and its directory are fsynced concurrently, one wait for the disk
// instead of two in a row. Readers never see a partial file (the rename
// comes after the write); only a power loss before both fsyncs end can
// leave the name with partial content, and a caller returns, and acts on
// the record, only after they end: such a record stands for work that had
// not started, and recovery discards it as unreadable. A name that exists
// is replaced with writeFileAtomic (an update must never leave a partial
// record where a complete one was).
func writeFileNew(name string, data []byte, perm os.FileMode) error {
	if _, err := os.Lstat(name); err == nil {
		return writeFileAtomic(name, data, perm)
	}
	if err := writeFileRename(name, data, perm, false); err != nil {
		return err
	}
	return syncNew(name)
}

// syncNew makes a file just renamed into place durable: its content and
// its name, the two fsyncs sharing one wait for the disk.
func syncNew(name string) error {
	dirErr := make(chan error, 1)
	go func() { dirErr <- syncDir(filepath.Dir(name)) }()
	err := fsyncPath(name)
	if derr := <-dirErr; err == nil {
		err = derr
	}
	return err
}

// atomicWriteHook is set by crash tests to die between write and rename.
var atomicWriteHook func()

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

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
