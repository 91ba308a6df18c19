package snapshot

import (
	"context"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// Undo reverts the changeset of entry id and journals that as a new entry
// ([Kind] "undo"). With id "" it reverts the newest entry that changed
// something and has not been undone (empty entries, checkpoints, and undo
// entries together with the entries they reverted are skipped), so repeated
// calls walk back through history; when info names a session, the newest
// such entry of that session, chosen under the store lock (see [Store.Undoable]). If a path was changed since by a later
// call or by anyone else, it returns a *[ConflictError] (wrapping
// [ErrConflict]) and changes nothing, unless force is set.
func (s *Store) Undo(ctx context.Context, id string, force bool, info CallInfo) (Entry, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	done, _ := s.startBudget(true, true) // the current state, for redo: over a limit is Unstored
	defer done()
	target, plan, conflicts, err := s.planUndo(ctx, id, info.Session)
	if err != nil {
		return Entry{}, err
	}
	if s.guardTakeover(ctx, "undo-"+target.ID, planPaths(plan)) {
		if target, plan, conflicts, err = s.planUndo(ctx, id, info.Session); err != nil {
			return Entry{}, err
		}
		if err := s.takeoverStale(planStates(plan)); err != nil {
			return Entry{}, err
		}
	}
	if len(conflicts) > 0 && !force {
		return Entry{}, &ConflictError{ID: target.ID, Conflicts: conflicts}
	}
	id2, err := s.nextID()
	if err != nil {
		return Entry{}, err
	}
	if info.Tool == "" {
		info.Tool = "undo"
	}
	if info.Summary == "" {
		info.Summary = "undo " + target.ID
	}
	rec := &pendingRec{ID: id2, Kind: KindUndo, Time: s.opts.now().UTC(), Session: info.Session, Tool: info.Tool,
		Summary: info.Summary, Phase: phaseRunning, Plan: plan, Reverts: target.ID, Force: force}
	return s.runPlan(ctx, rec)
}

// planUndo works out, under the lock and changing nothing, what undoing
// entry id (or the editor-style target for "", of session when set) would
// restore: the entry, the plan (Old: the path now, New: its state before
// the entry) and the conflicts.
func (s *Store) planUndo(ctx context.Context, id, session string) (Entry, []diskChange, []Conflict, error) {
	target, err := s.undoTarget(ctx, id, session)
	if err != nil {
		return Entry{}, nil, nil, err
	}
	if len(target.Changes) == 0 {
		return Entry{}, nil, nil, fmt.Errorf("snapshot: call %s changed nothing; nothing to undo", target.ID)
	}
	rootfd, err := s.openRoot()
	if err != nil {
		return Entry{}, nil, nil, err
	}
	defer unix.Close(rootfd)
	later, err := s.entriesAfter(ctx, target.ID)
	if err != nil {
		return Entry{}, nil, nil, err
	}
	ix, err := s.loadIndex()
	if err != nil {
		return Entry{}, nil, nil, err
	}
	var plan []diskChange
	var conflicts []Conflict
	for _, ch := range target.Changes {
		cur, err := s.statPath(rootfd, ch.Path, ix.entries[ch.Path])
		if err != nil {
			return Entry{}, nil, nil, err
		}
		curN := nodeOf(cur)
		if !sameContent(curN, ch.New) {
			c := Conflict{Path: ch.Path, Reason: describeDrift(ch.New, curN)}
			for i := len(later) - 1; i >= 0 && c.By == ""; i-- {
				for _, lc := range later[i].Changes {
					if lc.Path == ch.Path {
						c.By = later[i].ID
						c.Reason += " (by call " + later[i].ID + ")"
						break
					}
				}
			}
			conflicts = append(conflicts, c)
		}
		plan = append(plan, diskChange{Path: rawString(ch.Path), Old: toDiskNode(curN), New: toDiskNode(ch.Old)})
	}
	conflicts = append(conflicts, s.structuralConflicts(rootfd, plan)...)
	return target, plan, conflicts, nil
}

// structuralConflicts finds what would block a plan: a directory to be
// removed that holds paths the plan does not cover, and a parent
// directory that is now something else.
func (s *Store) structuralConflicts(rootfd int, plan []diskChange) []Conflict {
	in := map[string]bool{}
	for _, d := range plan {
		in[string(d.Path)] = true
	}
	var out []Conflict
	seen := map[string]bool{}
	for _, d := range plan {
		p, cur, target := string(d.Path), fromDiskNode(d.Old), fromDiskNode(d.New)
		if cur != nil && cur.Type == TypeDir && (target == nil || target.Type != TypeDir) {
			fd, err := openDirAt(rootfd, p)
			if err == nil {
				f := os.NewFile(uintptr(fd), p)
				names, _ := f.Readdirnames(-1)
				f.Close()
				for _, n := range names {
					if c := joinRel(p, n); !in[c] {
						out = append(out, Conflict{Path: c, Reason: "is in a directory the undo removes, and was created since"})
					}
				}
			}
		}
		if target == nil {
			continue
		}
		for dir, _ := splitRel(p); dir != ""; dir, _ = splitRel(dir) {
			if in[dir] || seen[dir] {
				continue
			}
			seen[dir] = true
			if t, err := lstatBeneath(rootfd, dir); err == nil && t != "" && t != TypeDir {
				reason := fmt.Sprintf("is now a %s where a directory must be", t)
				if t == TypeSymlink {
					reason += " (--force replaces the link itself, never what it points to)"
				}
				out = append(out, Conflict{Path: dir, Reason: reason})
			}
		}
	}
	return out
}

func describeDrift(want, got *Node) string {
	switch {
	case got == nil:
		return "deleted since"
	case want == nil:
		return "created since"
	case got.Type != want.Type:
		return fmt.Sprintf("is now a %s, was a %s", got.Type, want.Type)
	case got.Mode != want.Mode && got.Hash == want.Hash && got.Link == want.Link:
		return fmt.Sprintf("mode changed since (%04o, was %04o)", got.Mode, want.Mode)
	default:
		return "modified since"
	}
}

// undoTarget resolves id, or finds the editor-style target when id is "".
func (s *Store) undoTarget(ctx context.Context, id, session string) (Entry, error) {
	if id != "" {
		return s.Get(ctx, id)
	}
	es, err := s.Undoable(ctx, session, 1)
	if err != nil {
		return Entry{}, err
	}
	if len(es) == 0 && session != "" {
		return Entry{}, fmt.Errorf("snapshot: nothing to undo: session %s has no call left to undo: %w", session, ErrNotFound)
	}
	if len(es) == 0 {
		return Entry{}, fmt.Errorf("snapshot: nothing to undo: %w", ErrNotFound)
	}
	return es[0], nil
}

// Undoable lists, newest first, the entries an editor-style undo would
// walk back through: those that changed something and have not been
// undone (empty entries, checkpoints, and undo entries together with the
// entries they reverted are left out). With session set, only that
// session's entries; with max > 0, at most max of them.
func (s *Store) Undoable(ctx context.Context, session string, max int) ([]Entry, error) {
	all, err := s.List(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []Entry
	skip := map[string]bool{}
	for _, e := range all {
		if skip[e.ID] {
			continue
		}
		if e.Kind == KindUndo {
			skip[e.Reverts] = true
			continue
		}
		if len(e.Changes) == 0 || e.Kind == KindCheckpoint || (session != "" && e.Session != session) {
			continue
		}
		out = append(out, e)
		if max > 0 && len(out) == max {
			break
		}
	}
	return out, nil
}

// entriesAfter returns the entries newer than id, oldest first. It reads
// only those: a rollback or undo near the end of a long journal costs
// what it restores, not the journal's length.
func (s *Store) entriesAfter(ctx context.Context, id string) ([]Entry, error) {
	ids, err := s.ids("journal")
	if err != nil {
		return nil, err
	}
	n, _ := parseID(id)
	first := sort.Search(len(ids), func(i int) bool {
		m, _ := parseID(ids[i])
		return m > n
	})
	return s.readEntries(ctx, ids[first:], 0)
}

// Rollback restores every path changed by entry toID and the entries after
// it to its state just before toID (for a checkpoint: its state at the
// checkpoint), and journals that as an entry of [Kind] "rollback". Paths that
// no entry since toID touched are left alone.
func (s *Store) Rollback(ctx context.Context, toID string, info CallInfo) (Entry, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	done, _ := s.startBudget(true, true) // the current state, for redo: over a limit is Unstored
	defer done()
	to, plan, err := s.planRollback(ctx, toID)
	if err != nil {
		return Entry{}, err
	}
	if s.guardTakeover(ctx, "rollback-"+to.ID, planPaths(plan)) {
		if to, plan, err = s.planRollback(ctx, toID); err != nil {
			return Entry{}, err
		}
		if err := s.takeoverStale(planStates(plan)); err != nil {
			return Entry{}, err
		}
	}
	id2, err := s.nextID()
	if err != nil {
		return Entry{}, err
	}
	if info.Tool == "" {
		info.Tool = "rollback"
	}
	if info.Summary == "" {
		info.Summary = "rollback to just before " + to.ID
	}
	rec := &pendingRec{ID: id2, Kind: KindRollback, Time: s.opts.now().UTC(), Session: info.Session, Tool: info.Tool,
		Summary: info.Summary, Phase: phaseRunning, Plan: plan, RollbackTo: to.ID}
	return s.runPlan(ctx, rec)
}

// planRollback works out, under the lock and changing nothing, what
// rolling back to just before entry toID would restore: the entry and the
// plan (Old: the path now, New: its state then), only paths that differ.
func (s *Store) planRollback(ctx context.Context, toID string) (Entry, []diskChange, error) {
	to, err := s.Get(ctx, toID)
	if err != nil {
		return Entry{}, nil, err
	}
	since, err := s.entriesAfter(ctx, to.ID)
	if err != nil {
		return Entry{}, nil, err
	}
	since = append([]Entry{to}, since...)
	var manifest *index
	if to.Manifest != "" {
		data, err := s.readBlob(to.Manifest)
		if err != nil {
			return Entry{}, nil, fmt.Errorf("snapshot: checkpoint %s: %w", to.ID, err)
		}
		if manifest, err = decodeIndex(data); err != nil {
			return Entry{}, nil, fmt.Errorf("snapshot: checkpoint %s: %w", to.ID, err)
		}
	}
	targets := map[string]*Node{}
	for _, e := range since {
		for _, ch := range e.Changes {
			if _, seen := targets[ch.Path]; seen {
				continue
			}
			if manifest != nil {
				targets[ch.Path] = nodeOf(manifest.entries[ch.Path])
			} else {
				targets[ch.Path] = ch.Old
			}
		}
	}
	paths := make([]string, 0, len(targets))
	for p := range targets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	rootfd, err := s.openRoot()
	if err != nil {
		return Entry{}, nil, err
	}
	defer unix.Close(rootfd)
	ix, err := s.loadIndex()
	if err != nil {
		return Entry{}, nil, err
	}
	var plan []diskChange
	for _, p := range paths {
		cur, err := s.statPath(rootfd, p, ix.entries[p])
		if err != nil {
			return Entry{}, nil, err
		}
		if curN := nodeOf(cur); !sameContent(curN, targets[p]) {
			plan = append(plan, diskChange{Path: rawString(p), Old: toDiskNode(curN), New: toDiskNode(targets[p])})
		}
	}
	return to, plan, nil
}

// runPlan checks, records and applies a restore plan, then journals it.
func (s *Store) runPlan(ctx context.Context, rec *pendingRec) (Entry, error) {
	items := planItems(rec.Plan)
	if err := s.checkRestorable(items); err != nil {
		return Entry{}, err
	}
	if err := s.syncStore(); err != nil { // blobs of the current state, for redo
		return Entry{}, err
	}
	if err := s.writePending(rec); err != nil {
		return Entry{}, err
	}
	s.hook("plan-pending")
	e, err := s.applyAndCommit(ctx, rec, false)
	if err == nil {
		s.maybeGC(ctx)
	}
	return e, err
}

func planItems(plan []diskChange) []planItem {
	items := make([]planItem, len(plan))
	for i, d := range plan {
		items[i] = planItem{Path: string(d.Path), Target: fromDiskNode(d.New)}
	}
	return items
}

// applyAndCommit applies a pending restore plan (again, after a crash) and
// journals what it changed.
func (s *Store) applyAndCommit(ctx context.Context, rec *pendingRec, interrupted bool) (Entry, error) {
	written, applyErr := s.apply(ctx, rec.ID, planItems(rec.Plan), rec.Force)
	if applyErr != nil && ctx.Err() != nil {
		return Entry{}, applyErr // stays pending; completed at the next lock
	}
	s.hook("plan-applied")
	rootfd, err := s.openRoot()
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(rootfd)
	e := Entry{ID: rec.ID, Time: rec.Time, CallInfo: rec.info(), Kind: rec.Kind, Reverts: rec.Reverts,
		RollbackTo: rec.RollbackTo, Interrupted: interrupted}
	if applyErr != nil {
		// Journal what did change, so that it can be seen and undone.
		e.Summary += " (incomplete: " + applyErr.Error() + ")"
	}
	ix, err := s.loadIndex()
	if err != nil {
		return Entry{}, err
	}
	updates := map[string]*ientry{}
	for _, d := range rec.Plan {
		p := string(d.Path)
		after, known := written[p]
		if !known {
			var err error
			if after, err = s.statPath(rootfd, p, ix.entries[p]); err != nil {
				return Entry{}, err
			}
		}
		updates[p] = after
		if ch, ok := classify(p, fromDiskNode(d.Old), nodeOf(after)); ok {
			e.Changes = append(e.Changes, ch)
		}
	}
	post := s.updateManifest(ix, updates) // saved as a delta record
	if err := s.commitEntry(e); err != nil {
		return Entry{}, err
	}
	if s.hasIndex() {
		if _, err := s.saveIndex(post); err != nil {
			s.opts.log.Warn("snapshot: saving manifest", "err", err)
		}
	}
	if err := s.removePending(rec.ID); err != nil {
		return e, err
	}
	if applyErr != nil {
		return e, fmt.Errorf("%w (what was restored is journaled as %s)", applyErr, e.ID)
	}
	return e, nil
}

// Checkpoint scans the whole workspace, stores everything in it, and
// journals an entry ([Kind] "checkpoint") holding the manifest, so that
// Rollback(entry.ID) later restores the state of this moment for every path
// changed since. Its changes are what changed outside any call since the
// previous scan (none for the first scan); undo skips checkpoints. It
// waits for a running whole-workspace call to finish (the shell lock).
func (s *Store) Checkpoint(ctx context.Context, message string, info CallInfo) (Entry, error) {
	// Its scan cannot tell a running shell command's writes from a
	// person's: it waits for the command to end.
	unshell, err := s.lockShell(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unshell()
	unlock, err := s.lockShelled(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	// A checkpoint records the baseline a person asked for: not capped
	// per call, but never below the free-space floor.
	done, err := s.startBudget(false, false)
	if err != nil {
		return Entry{}, err
	}
	defer done()
	id, err := s.nextID()
	if err != nil {
		return Entry{}, err
	}
	if info.Tool == "" {
		info.Tool = "checkpoint"
	}
	if message != "" {
		info.Summary = message
	}
	old, err := s.loadIndex()
	if err != nil {
		return Entry{}, err
	}
	cur, err := s.scan(ctx, old)
	if err != nil {
		return Entry{}, err
	}
	s.hook("checkpoint-scanned")
	if cur != old || !s.hasIndex() || s.manifestHash(cur) == "" {
		if _, err := s.saveIndex(cur); err != nil {
			return Entry{}, err
		}
	}
	// The manifest blob is the index file itself, hard-linked: written
	// once, never modified (the index is replaced by rename).
	h := s.manifestHash(cur)
	if h == "" {
		return Entry{}, fmt.Errorf("snapshot: checkpoint: manifest not cached")
	}
	if !s.hasBlob(h) {
		if err := s.linkBlob(s.path("index"), h); err != nil {
			if _, _, err := s.putBytes(cur.encode(), false); err != nil {
				return Entry{}, err
			}
		}
	}
	e := Entry{ID: id, Time: s.opts.now().UTC(), CallInfo: info, Kind: KindCheckpoint, Manifest: h}
	if len(old.entries) > 0 {
		// What changed outside any call since the last scan: recorded so
		// that a rollback to an earlier point restores it too.
		e.Changes = diffIndex(old, cur)
	}
	if err := s.commitEntry(e); err != nil {
		return Entry{}, err
	}
	s.maybeGC(ctx)
	return e, nil
}
