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
// with Env.AttachJobSnapshot; if it does not, the snapshot stage finishes
// it when the call returns, like any other.
type DetachedSnapshot struct {
	call  SnapshotCall
	taken atomic.Bool
}

// Taken reports whether a job took the snapshot over.
func (d *DetachedSnapshot) Taken() bool { return d != nil && d.taken.Load() }

// AttachJobSnapshot hands the call's detached snapshot to background job
// jobID (Jobs.AttachSnapshot). It reports false when there is none to
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
// jobs end; Jobs implementations embed it (it implements
// Jobs.AttachSnapshot) and call FinishJob when a job is seen to end.
// Safe for concurrent use.
type JobSnapshots struct {
	mu    sync.Mutex
	snaps map[string]SnapshotCall
	// Logger reports snapshots that could not be finished; may be nil.
	Logger *slog.Logger
	// Wait bounds each finish (0: 30 s).
	Wait time.Duration
}

func (j *JobSnapshots) wait() time.Duration {
	if j.Wait > 0 {
		return j.Wait
	}
	return 30 * time.Second
}

// AttachSnapshot implements Jobs.AttachSnapshot: it always takes snap.
func (j *JobSnapshots) AttachSnapshot(id string, snap SnapshotCall) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snaps == nil {
		j.snaps = map[string]SnapshotCall{}
	}
	j.snaps[id] = snap
	return true
}

// FinishJob journals the changes of job id, which has ended, and records
// the outcome in st (nothing when no snapshot is attached). It waits at
// most Wait (default 30 s) for the store. A failed finish leaves the
// snapshot attached, so a later read or shutdown retries; the store's
// recovery completes it if the process dies first.
func (j *JobSnapshots) FinishJob(ctx context.Context, id string, st *JobStatus) {
	j.mu.Lock()
	snap := j.snaps[id]
	delete(j.snaps, id)
	j.mu.Unlock()
	if snap == nil {
		return
	}
	// The finish waits for a running foreground shell command (its
	// scan must not take that command's changes for the job's): bounded,
	// so that BashOutput does not hang on it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.wait())
	defer cancel()
	e, err := snap.Finish(fctx)
	if err != nil {
		j.mu.Lock()
		j.snaps[id] = snap
		j.mu.Unlock()
		if j.Logger != nil {
			j.Logger.Warn("journaling a background job's changes", "job", id, "err", err)
		}
		if st != nil {
			st.JournalError = "the changes of this background job could not be recorded yet: " + err.Error()
		}
		return
	}
	if j.Logger != nil {
		if e.RevertError != "" {
			j.Logger.Error("a background job changed protected paths that could not be reverted", "job", id, "journal", e.ID, "err", e.RevertError)
		} else if len(e.Reverted) > 0 {
			j.Logger.Warn("reverted a background job's changes to protected paths", "job", id, "journal", e.ID, "paths", len(e.Reverted))
		}
	}
	if st != nil {
		st.Journal = &e
	}
}

// FinishAll journals every attached job's changes (at shutdown, after the
// jobs were killed), oldest job id first.
func (j *JobSnapshots) FinishAll(ctx context.Context) {
	j.mu.Lock()
	ids := make([]string, 0, len(j.snaps))
	for id := range j.snaps {
		ids = append(ids, id)
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
