package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SnapshotStage snapshots what a mutating call can touch before it runs
// and, after it ran, captures the changes into a journal entry (change
// capture + journal). Read-only calls pass straight through. Without a
// store (nil) mutating calls still run, unjournaled. If the snapshot
// cannot be taken the call does not run: no change without a way back.
//
// A Detached scope (Bash run_in_background) with a [DetachedSnapshotter]
// store begins a detached snapshot: the pre-scan is taken now, the store
// lock is not held while the job runs, and once the tool has attached the
// snapshot to its job ([Env.AttachJobSnapshot]) the job's end journals it.
// If the tool attached nothing (the job did not start) it is finished or
// aborted here like any call.
//
// Changes to protected paths found in the changeset are reverted before
// the entry is journaled unless the call was approved for them or ap, asked
// after the run, says to keep them; the result tells the model and the
// operator what was reverted and why.
func SnapshotStage(store Snapshotter, ap Approver) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			sc := ScopeOf(c)
			c.Scope = sc
			if sc.Kind == ScopeNone || store == nil {
				return next(ctx, c)
			}
			info := SnapshotInfo{CallID: c.ID, Session: c.Session.ID, Tool: c.Tool.Name(), Summary: summarize(c), Keep: keepFor(c, ap)}
			if w, ok := c.Tool.(SandboxWriter); ok {
				info.Staged = w.WritesOnlyFiles() && sc.Kind == ScopeFiles
			}
			var snap SnapshotCall
			var err error
			ds, detached := store.(DetachedSnapshotter)
			if detached = detached && sc.Detached && sc.Kind == ScopeWorkspace; detached {
				snap, err = ds.BeginDetached(ctx, info)
			} else {
				snap, err = store.Begin(ctx, info, sc)
			}
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return Fail(ErrTimeout, "the call was cancelled while taking its snapshot; nothing was changed")
				}
				if msg := snapshotLimitMessage(err); msg != "" {
					return Fail(ErrExecution, "%s", msg)
				}
				return Fail(ErrInternal, "agentbox could not snapshot the workspace before this call, so it did not run it; nothing was changed")
			}
			if detached {
				c.Detached = &DetachedSnapshot{call: snap}
			}
			if g, ok := snap.(StagedSnapshot); ok && info.Staged {
				c.gate = g.Gate()
			}
			res := next(ctx, c)
			if c.Detached.Taken() {
				// A background job owns the snapshot now: its changes are
				// journaled as one entry when it ends.
				res.SetMeta("journal", "pending until the background job ends")
				return res
			}
			// By contract a tool that refused changed nothing.
			acted := res.Err == nil || !refusedBeforeActing(res.Err.Kind)
			entry, err := EndSnapshot(ctx, snap, acted)
			if err != nil {
				res.SetMeta("journal_error", "the changes of this call could not be recorded")
				if res.Err == nil {
					res.Err = Errorf(ErrInternal, "the call ran but its changes could not be recorded for undo")
				}
				return res
			}
			if entry == nil {
				return res // dropped: no journal entry
			}
			c.Journal = entry
			if entry.ID != "" {
				res.SetMeta("journal_id", entry.ID)
			}
			ReportReverted(&res, *entry)
			changes := entry.Changes
			if changes == nil {
				changes = []Change{}
			}
			res.SetMeta("changes", changes)
			return res
		}
	}
}

// EndSnapshot ends a snapshot begun before a call (or an `agentbox exec`
// command) ran: the rule every journaled change goes through. When the
// call did not act (it refused before doing anything) the snapshot is
// dropped without a journal entry (nil); otherwise, or when dropping
// fails, the changes are captured and journaled, even when ctx is done:
// a command may have changed files before it was stopped.
func EndSnapshot(ctx context.Context, snap SnapshotCall, acted bool) (*JournalEntry, error) {
	ctx = context.WithoutCancel(ctx)
	if !acted {
		if err := snap.Abort(ctx); err == nil {
			return nil, nil
		}
	}
	entry, err := snap.Finish(ctx)
	if err != nil {
		return nil, err
	}
	return &entry, nil
}

// ScopeOf is what the call can touch: the tool's own Scope, or by
// default nothing for a read-only call, the call's paths for edit, delete
// and move tools, else the whole workspace.
func ScopeOf(c *Call) Scope {
	if c.Verdict != nil && c.Verdict.Class == ClassReadOnly {
		return Scope{Kind: ScopeNone} // proven read-only: nothing to capture
	}
	if s, ok := c.Tool.(Scoper); ok {
		return s.Scope(c.Params)
	}
	if c.Tool.ReadOnly(c.Params) {
		return Scope{Kind: ScopeNone}
	}
	switch c.Tool.Kind() {
	case KindEdit, KindDelete, KindMove:
		if len(c.Paths) > 0 {
			return Scope{Kind: ScopeFiles, Paths: slices.Clone(c.Paths)}
		}
	}
	return Scope{Kind: ScopeWorkspace}
}

// refusedBeforeActing reports whether a tool error of this kind means the
// tool changed nothing (see the contract in doc.go).
func refusedBeforeActing(k ErrorKind) bool {
	switch k {
	case ErrValidation, ErrNotFound, ErrPermissionDenied, ErrNeedsApproval, ErrForbidden, ErrConflict:
		return true
	}
	return false
}

// ReportReverted tells the model (and through the meta, the operator)
// which changes to protected paths were reverted, and loudly which could
// not be. Background jobs' results use it too.
func ReportReverted(res *Result, e JournalEntry) {
	if len(e.Reverted) > 0 {
		res.SetMeta("reverted", e.Reverted)
		var b strings.Builder
		b.WriteString("\n\nagentbox reverted this call's changes to protected paths (a host program would run or load them without anyone deciding to run project code):")
		for _, r := range e.Reverted {
			fmt.Fprintf(&b, "\n- %s (%s): %s", r.Path, r.Op, r.Reason)
		}
		b.WriteString("\nDo not retry; if the change is needed, ask the user to make it or to approve it.")
		res.Content += b.String()
	}
	if e.RevertError != "" {
		res.SetMeta("revert_error", e.RevertError)
		res.Content += "\n\nWARNING: " + e.RevertError + ". The operator must review them (agentbox history, agentbox undo)."
	}
}

// Sentinels wrapped by [SnapshotLimitError].
var (
	// ErrSnapshotTooLarge: the call's snapshot would need more new content
	// than the per-call limit (snapshot.max_call_bytes).
	ErrSnapshotTooLarge = errors.New("snapshot over the per-call limit")
	// ErrSnapshotNoSpace: the disk holding the snapshots is nearly full
	// (below snapshot.min_free_bytes).
	ErrSnapshotNoSpace = errors.New("snapshot disk nearly full")
)

// SnapshotLimitError is a [Snapshotter]'s refusal to begin because one of
// the store's limits would be passed. The composition root translates the
// store's own limit errors to it; the snapshot stage turns it into a
// message the model can act on.
type SnapshotLimitError struct {
	Err error // ErrSnapshotTooLarge or ErrSnapshotNoSpace
	// Path is a workspace-relative file that made the snapshot too large,
	// if known.
	Path string
	// Cause is the store's own error, for logs.
	Cause error
}

func (e *SnapshotLimitError) Error() string {
	if e.Cause != nil {
		return e.Cause.Error()
	}
	return e.Err.Error()
}

func (e *SnapshotLimitError) Unwrap() error { return e.Err }

// snapshotLimitMessage is the model-facing text for a snapshot refused by
// one of the store's limits (see SnapshotLimitError), or "".
func snapshotLimitMessage(err error) string {
	var le *SnapshotLimitError
	if !errors.As(err, &le) {
		return ""
	}
	if errors.Is(err, ErrSnapshotTooLarge) {
		where := ""
		if le.Path != "" {
			where = fmt.Sprintf(" (such as %q)", le.Path)
		}
		return fmt.Sprintf("this call was not run and nothing was changed: its snapshot would need more new content than the per-call limit (snapshot.max_call_bytes), because large files changed%s. "+
			"Ask the user to record them with `agentbox checkpoint`, exclude them with snapshot.exclude, or raise snapshot.max_call_bytes", where)
	}
	return "this call was not run and nothing was changed: the disk holding agentbox's snapshots is nearly full (below snapshot.min_free_bytes). " +
		"Ask the user to run `agentbox snapshots gc`, free disk space, or lower snapshot.min_free_bytes"
}
