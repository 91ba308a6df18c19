package snapshot

// Locking: what may run at the same time on one workspace's store.
//
// Two flocks order the work of every process on the workspace (a flock
// belongs to an open file, so two descriptors of one process exclude
// each other as two processes do):
//
//   - the shell lock (file "shell.lock", lockShell) is held by whatever
//     scans the whole workspace while a command may be writing to it: a
//     whole-workspace call from Begin to Finish or Abort; briefly, a
//     background job's start and end, a checkpoint, recovery of a dead
//     whole-workspace call and the live guard's sweep.
//   - the store lock (file "lock"; lock, lockShelled, tryLock) is held by
//     whatever changes the store (objects, index, journal, pending
//     records) or needs it unchanged while it reads; History and Diff
//     read committed entries without it. Taking it first waits until this
//     process's lazily committed entries are durable (waitFlushed) and
//     then completes what a dead holder left (recover).
//
// Lock order, outermost first. A lock is only waited for while holding
// locks above it, never one below:
//
//  1. Detached.mu (a background job's Finish or Abort; the Detached of a
//     foreground call, which nothing else sees, is locked under the shell
//     lock its call holds from Begin)
//  2. the shell lock
//  3. the store lock
//  4. liveGuard.mu, then capture.mu (held for a whole scan), then
//     Store.mu (the cached index) or watcher.mu, never one inside the
//     other
//  5. lazyMu and syncMu: leaves, never held across I/O or another lock.
//
// One step runs the other way, without waiting: recovery, holding the
// store lock, tries the shell lock (flock with wait false) and defers a
// dead whole-workspace call to a later lock when it is held, so no cycle
// can form. Waiting for a goroutine counts as taking the locks it waits
// for: lockWait waits for the flusher, which takes no flock; dropLive,
// under the store lock, stops the live guard by cancelling its wait for
// that lock before it waits for the guard to end.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// tryLock is lock without waiting: it returns a nil func when the lock is
// held elsewhere.
func (s *Store) tryLock(ctx context.Context) (func(), error) {
	return s.lockWait(ctx, false, false)
}

// lock takes the store's exclusive lock, waiting until ctx is done, and
// then completes whatever a dead holder left pending.
func (s *Store) lock(ctx context.Context) (func(), error) {
	return s.lockWait(ctx, true, false)
}

// lockShelled is lock for a caller that holds the shell lock: recovery
// may then complete dead whole-workspace calls.
func (s *Store) lockShelled(ctx context.Context) (func(), error) {
	return s.lockWait(ctx, true, true)
}

func (s *Store) lockWait(ctx context.Context, wait, shellHeld bool) (func(), error) {
	f, err := s.flock(ctx, "lock", wait)
	if err != nil || f == nil {
		return nil, err
	}
	unlock := func() {
		s.flushUsage()
		f.Close() // closing the descriptor releases the flock
	}
	// Nothing done under this lock may be durable before the entries
	// this process committed lazily are (commitLazyEntry).
	s.waitFlushed()
	if err := s.recover(ctx, shellHeld); err != nil {
		s.added.Store(0) // what a failed recovery wrote is recounted
		os.Remove(s.path("usage"))
		unlock()
		return nil, err
	}
	return unlock, nil
}

// flock opens the store's file name and takes an exclusive flock on it,
// polling until ctx is done when wait is set; without wait it returns a
// nil file when the lock is held elsewhere (by another process, or by
// another descriptor of this one: flocks belong to open files). Closing
// the file releases the lock.
func (s *Store) flock(ctx context.Context, name string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(s.path(name), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %s: %w", name, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("snapshot: %s: %w", name, err)
		}
		if !wait {
			f.Close()
			return nil, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			what := "the store lock"
			if name == shellLockName {
				what = "the running shell command"
			}
			return nil, fmt.Errorf("snapshot: waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(s.opts.lockPoll):
		}
	}
}

// shellLockName is the flock that whole-workspace captures hold (see
// lockShell).
const shellLockName = "shell.lock"

// lockShell takes the shell lock, waiting until ctx is done. A
// whole-workspace call holds it from Begin to Finish, and every other
// whole-workspace scan (a background job's start and end, a checkpoint,
// recovery of a dead whole-workspace call) holds it while it scans: a
// scan cannot tell a running command's writes from anyone else's, so no
// scan but the command's own may run while one runs. Always taken before
// the store lock, never while holding it.
func (s *Store) lockShell(ctx context.Context) (func(), error) {
	f, err := s.flock(ctx, shellLockName, true)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}
