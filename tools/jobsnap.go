package tools

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DetachedSnapshotter is implemented by snapshot stores that can capture a
// background job's changes when the job ends rather than when the call
// that started it returns. The store lock is not held in between, so other
// calls go on while the job runs.
type DetachedSnapshotter interface {
	BeginDetached(ctx context.Context, info SnapshotInfo) (SnapshotCall, error)
}

// DetachedSnapshot is the open snapshot of a call whose scope is Detached
// (Bash with run_in_background). The tool hands it to the job it started
// with [Env.AttachJobSnapshot]; if it does not, the snapshot stage finishes
// it when the call returns, like any other.
type DetachedSnapshot struct {
	call  SnapshotCall
	taken atomic.Bool
}

// Taken reports whether a job took the snapshot over.
func (d *DetachedSnapshot) Taken() bool { return d != nil && d.taken.Load() }

// AttachJobSnapshot hands the call's detached snapshot to background job
// jobID ([Jobs].AttachSnapshot). It reports false when there is none to
// hand over or the Jobs does not take it (the call is then journaled when
// it returns, as before).
func (e *Env) AttachJobSnapshot(jobID string) bool {
	d := e.Detached
	if d == nil || d.call == nil || e.Jobs == nil {
		return false
	}
	if !d.taken.CompareAndSwap(false, true) {
		return false
	}
	if !e.Jobs.AttachSnapshot(jobID, d.call) {
		d.taken.Store(false)
		return false
	}
	return true
}

// JobSnapshots keeps the snapshots attached to background jobs until the
// jobs end; [Jobs] implementations embed it (it implements
// Jobs.AttachSnapshot) and call FinishJob when a job is seen to end, or
// FinishOnExit to finish it the moment it exits.
// Safe for concurrent use.
type JobSnapshots struct {
	mu    sync.Mutex
	snaps map[string]SnapshotCall
	// fin holds a finish under way, or done and not yet reported to a
	// Read or Kill (FinishOnExit's).
	fin map[string]*jobFinish
	// Logger reports snapshots that could not be finished; may be nil.
	Logger *slog.Logger
	// Wait bounds each finish (0: 30 s).
	Wait time.Duration
}

// jobFinish is one finish of a job's snapshot.
type jobFinish struct {
	done  chan struct{} // closed when entry and err are set
	entry JournalEntry
	err   error
}

func (j *JobSnapshots) wait() time.Duration {
	if j.Wait > 0 {
		return j.Wait
	}
	return 30 * time.Second
}

// AttachSnapshot implements [Jobs].AttachSnapshot: it always takes snap.
func (j *JobSnapshots) AttachSnapshot(id string, snap SnapshotCall) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snaps == nil {
		j.snaps = map[string]SnapshotCall{}
	}
	j.snaps[id] = snap
	return true
}

// FinishOnExit finishes job id's snapshot as soon as exited is closed
// (the job's command has ended), not when its output is next read: the
// job's changes are judged (protected paths reverted) at once. The entry
// is kept for the Read or Kill that reports the end (FinishJob). A finish
// that fails is retried, with a growing pause, while the snapshot is
// still attached (FinishAll takes it at shutdown).
func (j *JobSnapshots) FinishOnExit(ctx context.Context, id string, exited <-chan struct{}) {
	go func() {
		<-exited
		pause := time.Second
		for {
			j.FinishJob(ctx, id, nil)
			j.mu.Lock()
			_, attached := j.snaps[id]
			j.mu.Unlock()
			if !attached {
				return
			}
			time.Sleep(pause)
			pause = min(2*pause, 30*time.Second)
		}
	}()
}

// FinishJob journals the changes of job id, which has ended, and records
// the outcome in st (nothing when no snapshot is attached; with a nil st
// the entry is kept for the next FinishJob that passes one). It waits at
// most Wait (default 30 s) for the store, and for a finish already under
// way. A failed finish leaves the snapshot attached, so a later read or
// shutdown retries; the store's recovery completes it if the process
// dies first.
func (j *JobSnapshots) FinishJob(ctx context.Context, id string, st *JobStatus) {
	j.mu.Lock()
	f := j.fin[id]
	if f == nil {
		snap := j.snaps[id]
		if snap == nil {
			j.mu.Unlock()
			return
		}
		delete(j.snaps, id)
		f = &jobFinish{done: make(chan struct{})}
		if j.fin == nil {
			j.fin = map[string]*jobFinish{}
		}
		j.fin[id] = f
		j.mu.Unlock()
		f.entry, f.err = j.finish(ctx, id, snap)
		j.mu.Lock()
		if f.err != nil {
			j.snaps[id] = snap
			delete(j.fin, id)
		}
		close(f.done)
		j.mu.Unlock()
	} else {
		j.mu.Unlock()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.wait())
		defer cancel()
		select {
		case <-f.done:
		case <-wctx.Done():
			if st != nil {
				st.JournalError = "the changes of this background job are being recorded"
			}
			return
		}
	}
	if st == nil {
		return
	}
	if f.err != nil {
		st.JournalError = "the changes of this background job could not be recorded yet: " + f.err.Error()
		return
	}
	j.mu.Lock()
	mine := j.fin[id] == f
	if mine {
		delete(j.fin, id) // reported once
	}
	j.mu.Unlock()
	if mine {
		e := f.entry
		st.Journal = &e
	}
}

// finish finishes snap, the snapshot of job id, within Wait.
func (j *JobSnapshots) finish(ctx context.Context, id string, snap SnapshotCall) (JournalEntry, error) {
	// The finish waits for a running foreground shell command (its
	// scan must not take that command's changes for the job's):
	// bounded, so that BashOutput does not hang on it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.wait())
	defer cancel()
	e, err := snap.Finish(fctx)
	if err != nil {
		if j.Logger != nil {
			j.Logger.Warn("journaling a background job's changes", "job", id, "err", err)
		}
		return e, err
	}
	if j.Logger != nil {
		if e.RevertError != "" {
			j.Logger.Error("a background job changed protected paths that could not be reverted", "job", id, "journal", e.ID, "err", e.RevertError)
		} else if len(e.Reverted) > 0 {
			j.Logger.Warn("reverted a background job's changes to protected paths", "job", id, "journal", e.ID, "paths", len(e.Reverted))
		}
	}
	return e, nil
}

// FinishAll journals every attached job's changes (at shutdown, after the
// jobs were killed), oldest job id first, and waits for finishes under way
// (FinishOnExit's).
func (j *JobSnapshots) FinishAll(ctx context.Context) {
	j.mu.Lock()
	ids := make([]string, 0, len(j.snaps)+len(j.fin))
	for id := range j.snaps {
		ids = append(ids, id)
	}
	for id := range j.fin {
		if _, ok := j.snaps[id]; !ok {
			ids = append(ids, id)
		}
	}
	j.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		j.FinishJob(ctx, id, nil)
	}
}

// JobJournalNote is the model-facing line about a finished job's journal
// entry ("" when st carries none), for BashOutput and KillShell.
func JobJournalNote(st JobStatus) string {
	switch {
	case st.Journal != nil && len(st.Journal.Changes) > 0:
		return "Its changes to the workspace were recorded as call " + st.Journal.ID + " (they can be undone)."
	case st.Journal != nil:
		return "It changed nothing in the workspace."
	case st.JournalError != "":
		return "Its changes could not be recorded yet; agentbox records them later (at the latest when it shuts down)."
	}
	return ""
}
