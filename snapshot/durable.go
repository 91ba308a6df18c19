package snapshot

// Durability: what is on the disk after a crash.
//
// Every file of the store gets its content under a temporary name first
// (blobs in tmp/, anything else through atomicfile's ".tmp-" names;
// recovery removes both) and is renamed (a blob also linked) into place
// complete, so a process killed at any moment (SIGKILL) leaves each name
// with its old content or its new, never a mix. Two files are changed in
// place and checked when read instead: records appended to index.delta
// carry their length and a CRC (delta.go), and the running size in
// "usage" is recounted after a crash (limits.go).
//
// A power loss can also lose what was not fsynced, renames included; so
// the steps of a call are made durable in this order, and a crash between
// two leaves what the earlier ones promise:
//
//  1. The pending record (what recovery completes): renamed into place,
//     then it and its directory are fsynced together (writeFileNew,
//     syncNew) before the tool changes anything; a Staged call's caller
//     waits for the fsyncs before its change becomes visible. Lost or
//     partial after a power loss only while nothing of the call is
//     visible: recovery discards it.
//  2. Blobs, the index and index.delta: put in place without fsync
//     and listed (noteUnsynced); syncStore makes them and their
//     directories durable before a record of a running call or an entry
//     refers to them. A power loss before that may lose them, and nothing
//     durable refers to them yet.
//  3. The journal entry: its temporary file is fsynced together with the
//     blobs it references (writeFileRenameWith, syncStore); the rename
//     after both is the commit point. Before it there is no entry, the
//     record remains, and recovery completes the call from it.
//  4. The entry's name: the journal directory is fsynced (commitEntry at
//     once, retirePending in the background after the call returned), and
//     only then is the pending record removed. A power loss before that
//     may undo the rename, never the record: recovery completes the call
//     again under the same ID. The removal is not fsynced: a record that
//     comes back beside its entry is dropped by recovery.
//
// A live file-scoped call commits lazily (commitLazyEntry): its entry is
// renamed into place unsynced, and the flusher (flushLater) does steps 3
// and 4 after the call returned, for all waiting calls at once. After a
// power loss its entry may be missing or unreadable, its record is not,
// and recovery completes the call again. Every store lock waits for the
// flusher first (lockWait), so nothing later is durable before it.
//
// A sync that fails marks the store dirty, and so does recovery when a
// dead process may have left unsynced blobs: the next syncStore is then
// one syncfs of the store's file system.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/atomicfile"
)

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

// fsyncPath fsyncs a file written earlier without fsync.
func fsyncPath(name string) error { return atomicfile.Sync(name) }

// writeFileAtomic writes data to name via a temporary file that is fsynced
// and renamed; the directory is fsynced too.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	return writeFileRename(name, data, perm, true)
}

// writeFileRename writes data to name via a temporary file and a rename
// (atomicfile), fsyncing both only if durable is set.
func writeFileRename(name string, data []byte, perm os.FileMode, durable bool) error {
	f, err := writeTemp(name, data)
	if err != nil {
		return err
	}
	defer f.Close()
	if durable {
		return f.Commit(name, perm)
	}
	return f.CommitNoSync(name, perm)
}

// writeFileRenameWith is writeFileRename with work that must be durable
// before name's new content is (syncStore: the blobs an entry references)
// run concurrently with the temporary file's fsync (atomicfile's
// CommitWith): both end before the rename, which stays the commit point,
// so the order a crash can observe is unchanged and the two flushes share
// one wait for the disk. The directory is not fsynced: the caller makes
// the new name durable.
func writeFileRenameWith(name string, data []byte, perm os.FileMode, also func() error) error {
	f, err := writeTemp(name, data)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.CommitWith(name, perm, also)
}

// writeTemp writes data to a new temporary file for name, to be
// committed by the caller, then calls the crash tests' hook.
func writeTemp(name string, data []byte) (*atomicfile.File, error) {
	f, err := atomicfile.Create(filepath.Dir(name), filepath.Base(name))
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if atomicWriteHook != nil {
		atomicWriteHook()
	}
	return f, nil
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
