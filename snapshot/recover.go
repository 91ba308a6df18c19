package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/config/atomicfile"
)

// recover completes or discards work a dead process left pending. It runs
// under the lock.
//
// It first removes what a dead writer left behind (removeLeftovers), then
// takes each pending record in turn (recovery.complete): a record that
// cannot be read is discarded, a live detached call is left alone, a
// committed call's record is retired, and an interrupted call, undo or
// rollback is completed from its record (or dropped when that fails, so
// that the store is never stuck).
func (s *Store) recover(ctx context.Context, shellHeld bool) error {
	s.removeLeftovers()
	defer func() {
		if s.dirty.Load() {
			os.Remove(s.path("usage")) // recounted when next needed
		}
	}()
	ids, err := s.ids("pending")
	if err != nil {
		return err
	}
	r := &recovery{s: s, ctx: ctx, shellHeld: shellHeld}
	defer r.close()
	for _, id := range ids {
		if err := r.complete(id); err != nil {
			return err
		}
	}
	return nil
}

// removeLeftovers removes the temporary blobs of a dead writer, live locks
// whose record is gone, and the temporary files of atomic writes.
func (s *Store) removeLeftovers() {
	if des, err := os.ReadDir(s.path("tmp")); err == nil {
		for _, de := range des {
			// A dead writer: the blobs it installed may not be durable yet,
			// nor counted in the running size.
			s.dirty.Store(true)
			os.Remove(s.path("tmp", de.Name()))
		}
	}
	// Live locks whose record is gone, or was never written (the owner
	// died between the two: both are made under the store lock).
	if des, err := os.ReadDir(s.path("pending")); err == nil {
		for _, de := range des {
			if id, ok := strings.CutSuffix(de.Name(), ".live"); ok && !s.detachedLive(id) {
				if _, err := os.Lstat(s.path("pending", id+".json")); errors.Is(err, os.ErrNotExist) {
					os.Remove(s.path("pending", de.Name()))
				}
			}
		}
	}
	// Temporary files of atomic writes a dead process left behind.
	for _, d := range []string{"", "journal", "pending"} {
		des, _ := os.ReadDir(s.path(d))
		for _, de := range des {
			if strings.HasPrefix(de.Name(), atomicfile.TempPrefix) {
				os.Remove(s.path(d, de.Name()))
			}
		}
	}
}

// recovery is the state of one recover pass over the pending records.
type recovery struct {
	s         *Store
	ctx       context.Context
	shellHeld bool // the caller holds the shell lock

	journalSynced bool // the journal directory was fsynced
	lazySynced    bool // the store was synced for a lazily committed entry

	// Completing a whole-workspace call scans the workspace: not while a
	// shell command runs (its writes would be taken for the dead call's).
	// Unless the caller holds it, the shell lock is tried, never waited
	// for (the store lock is held); held elsewhere, such records wait for
	// a later lock.
	shell      *os.File
	shellTried bool
}

func (r *recovery) shellFree() bool {
	if r.shellHeld {
		return true
	}
	if !r.shellTried {
		r.shellTried = true
		r.shell, _ = r.s.flock(r.ctx, shellLockName, false)
	}
	return r.shell != nil
}

func (r *recovery) close() {
	if r.shell != nil {
		r.shell.Close()
	}
}

// complete completes or discards the pending record id.
func (r *recovery) complete(id string) error {
	s, ctx := r.s, r.ctx
	data, err := os.ReadFile(s.path("pending", id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil // retired meanwhile (retirePending)
	}
	if err != nil {
		return fmt.Errorf("snapshot: recovery: %w", err)
	}
	var rec pendingRec
	err = json.Unmarshal(data, &rec)
	if err == nil && rec.Detached && s.detachedLive(id) {
		return nil // an open detached call whose owner is alive
	}
	s.dirty.Store(true)
	if err != nil {
		// A new record is renamed into place complete, so this is a
		// power loss before it was durable (its call had not started:
		// writeFileNew) or damage from outside; nothing can be
		// completed from it.
		s.opts.log.Warn("snapshot: discarding unreadable pending record", "call", id, "err", err)
		return s.removePending(id)
	}
	if rec.Phase == phaseRunning && (rec.Detached || rec.Whole && rec.Kind == KindCall) && !r.shellFree() {
		s.opts.log.Debug("snapshot: a shell command is running; completing a dead call later", "call", id)
		return nil
	}
	if rec.Detached && rec.Phase == phaseRunning {
		return r.completeDetached(id, &rec)
	}
	if rec.Phase == phaseRunning && s.entryExists(id) {
		if err := r.checkCommitted(id); err != nil {
			return err
		}
	}
	if s.entryExists(id) || rec.Phase != phaseRunning {
		// Already committed, or nothing had been changed yet. A
		// committed entry's name is made durable before its record
		// goes (commitCallEntry).
		if !r.journalSynced {
			if err := syncDir(s.path("journal")); err != nil {
				return fmt.Errorf("snapshot: recovery: %w", err)
			}
			r.journalSynced = true
		}
		return s.removePending(id)
	}
	s.opts.log.Info("snapshot: completing interrupted call", "call", id, "kind", rec.Kind)
	switch rec.Kind {
	case KindCall:
		_, err = s.finishCall(ctx, &rec, nil, true, nil)
	case KindUndo, KindRollback:
		_, err = s.applyAndCommit(ctx, &rec, true)
	default:
		err = s.removePending(id)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("snapshot: recovering call %s: %w", id, err)
	}
	if err != nil {
		// Never leave the store stuck on something it cannot complete.
		s.opts.log.Warn("snapshot: recovery could not complete a call; dropping it", "call", id, "err", err)
		return s.removePending(id)
	}
	return nil
}

// completeDetached completes a detached call whose process died, or drops
// it when that fails.
func (r *recovery) completeDetached(id string, rec *pendingRec) error {
	s := r.s
	s.opts.log.Info("snapshot: completing detached call whose process died", "call", id)
	if _, err := s.finishDetached(r.ctx, rec, nil, true, nil, nil); err != nil {
		if r.ctx.Err() != nil {
			return fmt.Errorf("snapshot: recovering call %s: %w", id, err)
		}
		s.opts.log.Warn("snapshot: recovery could not complete a detached call; dropping it", "call", id, "err", err)
		return s.dropDetached(id)
	}
	return nil
}

// checkCommitted looks at the entry a running call's record already has:
// one that cannot be read was committed lazily (commitLazyEntry) and cut
// by a power loss before the flush, and goes (the call is completed again
// from its record); one that can is made durable, with what it depends on,
// before the record goes.
func (r *recovery) checkCommitted(id string) error {
	s := r.s
	if _, err := s.readEntry(id); err != nil {
		s.opts.log.Warn("snapshot: discarding an entry that was never made durable; completing its call again", "call", id, "err", err)
		return s.removeEntry(id)
	}
	if !r.lazySynced {
		// It may have been committed lazily by a process still flushing
		// it, or one that died before.
		s.dirty.Store(true)
		if err := s.syncStore(); err != nil {
			return fmt.Errorf("snapshot: recovery: %w", err)
		}
		r.lazySynced = true
	}
	return nil
}
