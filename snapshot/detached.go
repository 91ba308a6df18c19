package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Detached is a call whose command outlives the tool call that started it
// (a background job). Unlike a [Call] it does not hold the store lock while
// the command runs, so other calls go on; it holds a "live" flock of its
// own instead, which tells recovery that its owner is alive.
//
// BeginDetached scans the whole workspace (storing pre-images) under the
// store lock, saves that manifest as a blob, writes a pending record and
// releases the lock. Finish takes the lock again, scans, and journals the
// difference against the call's own pre-scan manifest as one entry. Its ID
// is the one reserved at BeginDetached when nothing was journaled since,
// else a new one allocated at that moment (so it sorts after every entry
// journaled while the job ran).
//
// Overlap: for a path that entries committed while the detached call was
// open also changed (file-scoped calls, undos, rollbacks, foreground
// shell calls), those entries own the span from the state before the
// first of them to the state after the last. The detached entry records
// only what changed after that span (from the last entry's new state to
// the final one), so undoing it never rewinds another journaled call's
// change. If the job had already changed the path before the first of
// those entries, or between two of them, that change is not in the
// detached entry (the other entry starts from the job's version) and the
// path is listed in [Entry].Overlapped. Changes the job made while a
// foreground shell command ran cannot be told apart from that command's
// own and are journaled with it.
//
// BeginDetached and Finish take the shell lock while they scan (they wait
// for a running foreground shell command); in between, nothing is held
// but the live flock. A foreground whole-workspace Call is a detached
// call that holds the shell lock from Begin to Finish.
//
// If the process dies while the call is open, the live flock goes with it:
// the next time any process locks the store, recovery finishes the call
// against its saved pre-scan manifest and journals it with Interrupted set.
//
// A *Detached is safe for concurrent use; Finish and Abort are idempotent
// (the second call returns ErrFinished).
type Detached struct {
	s    *Store
	mu   sync.Mutex
	rec  pendingRec
	pre  *index
	live *os.File
	done bool
	keep KeepFunc // SetKeep
}

// ErrFinished is returned by a second Finish or Abort of a Detached.
var ErrFinished = errors.New("snapshot: detached call already finished")

func (s *Store) livePath(id string) string { return s.path("pending", id+".live") }

// BeginDetached starts a detached call (see [Detached]): it waits for the
// shell lock (a running foreground shell command) and the store lock,
// scans the whole workspace, and returns once the pre-scan is durable,
// with both locks released.
func (s *Store) BeginDetached(ctx context.Context, info CallInfo) (*Detached, error) {
	unshell, err := s.lockShell(ctx)
	if err != nil {
		return nil, err
	}
	defer unshell()
	d, err := s.beginDetached(ctx, info, false)
	if err == nil {
		s.addLive(d)
	}
	return d, err
}

// beginDetached is BeginDetached with the shell lock held by the caller.
// shell marks the record of a foreground whole-workspace Call.
func (s *Store) beginDetached(ctx context.Context, info CallInfo, shell bool) (*Detached, error) {
	unlock, err := s.lockShelled(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	done, err := s.startBudget(s.hasIndex(), false)
	if err != nil {
		return nil, err
	}
	defer done()
	id, err := s.nextID()
	if err != nil {
		return nil, err
	}
	d := &Detached{s: s, rec: pendingRec{ID: id, Kind: KindCall, Time: s.opts.now().UTC(), Session: info.Session,
		Tool: info.Tool, Summary: info.Summary, Phase: phaseRunning, Whole: true, Detached: true, Shell: shell}}
	// The live lock exists before the pending record: recovery never sees
	// a running detached record without a holder unless its owner died.
	live, err := os.OpenFile(s.livePath(id), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		live.Close()
		return nil, fmt.Errorf("snapshot: live lock: %w", err)
	}
	fail := func(err error) (*Detached, error) {
		live.Close()
		os.Remove(s.livePath(id))
		return nil, err
	}
	old, err := s.loadIndex()
	if err != nil {
		return fail(err)
	}
	pre, err := s.scan(ctx, old)
	if err != nil {
		return fail(err)
	}
	s.guardDrift(ctx, id, old, pre)
	if pre != old || !s.hasIndex() || s.manifestHash(pre) == "" {
		if _, err := s.saveIndex(pre); err != nil {
			return fail(err)
		}
	}
	// The pre-scan manifest, kept as a blob (the index file hard-linked,
	// as a checkpoint does): the index itself moves on with other calls.
	h := s.manifestHash(pre)
	if h == "" {
		return fail(errors.New("snapshot: detached call: manifest not cached"))
	}
	if !s.hasBlob(h) {
		if err := s.linkBlob(s.path("index"), h); err != nil {
			if h, _, err = s.putBytes(pre.encode(), false); err != nil {
				return fail(err)
			}
		}
		d.rec.OwnManifest = true
	}
	d.rec.Manifest = h
	if err := s.syncStore(); err != nil {
		return fail(err)
	}
	if err := s.writePending(&d.rec); err != nil {
		return fail(err)
	}
	s.hookCall("detached-begun", id)
	d.pre, d.live = pre, live
	return d, nil
}

// ID is the key of the detached call's pending record; its journal entry
// gets a new ID when it is finished.
func (d *Detached) ID() string { return d.rec.ID }

// Finish journals what changed since BeginDetached (see [Detached] for
// overlapping calls). It waits for the shell lock (a running foreground
// shell command) and the store lock until ctx is done. If it
// fails the call stays pending and open; a later Finish may retry, and if
// the process exits first recovery completes it.
func (d *Detached) Finish(ctx context.Context) (Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return Entry{}, ErrFinished
	}
	// Not while a foreground shell command runs: its scan would take
	// that command's changes so far for the job's.
	unshell, err := d.s.lockShell(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unshell()
	return d.finish(ctx)
}

// finish is Finish with the shell lock held and d.mu locked.
func (d *Detached) finish(ctx context.Context) (Entry, error) {
	unlock, err := d.s.lockShelled(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	e, err := d.s.finishDetached(ctx, &d.rec, d.pre, false, d.keep, d.s.liveReverted(d))
	if err != nil {
		return Entry{}, err
	}
	d.s.maybeGC(ctx)
	d.done = true
	d.release()
	d.s.dropLive(d)
	return e, nil
}

// Abort ends a detached call whose command never started: nothing is
// journaled. It takes the store lock (so that recovery never sees the
// record half dropped); if ctx ends first the record is dropped anyway.
func (d *Detached) Abort(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return ErrFinished
	}
	d.done = true
	d.s.dropLive(d)
	unlock, lerr := d.s.lock(ctx)
	if lerr == nil {
		defer unlock()
	}
	err := d.s.removePending(d.rec.ID)
	d.release()
	if lerr == nil && err == nil {
		d.s.dropManifest(&d.rec, nil, nil)
	}
	return err
}

func (d *Detached) release() {
	if d.live != nil {
		os.Remove(d.s.livePath(d.rec.ID))
		d.live.Close()
		d.live = nil
	}
}

// detachedLive reports whether the owner of detached record id is alive
// (holds its live flock). Runs under the store lock.
func (s *Store) detachedLive(id string) bool {
	f, err := os.OpenFile(s.livePath(id), os.O_RDWR, 0)
	if err != nil {
		return false // never created, or removed: the owner is gone
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	return false // closing f releases the probe's lock
}

// finishDetached journals a detached call under the store lock. pre is
// its pre-scan manifest (nil: load it from the record's blob).
// live is what the live guard reverted while the call was open (see
// jobguard.go); it heads the entry's Reverted.
func (s *Store) finishDetached(ctx context.Context, rec *pendingRec, pre *index, interrupted bool, keep KeepFunc, live []Protected) (Entry, error) {
	done, _ := s.startBudget(true, true) // the job ran: over a limit is Unstored, not an error
	defer done()
	if pre == nil {
		data, err := s.readBlob(rec.Manifest)
		if err != nil {
			return Entry{}, fmt.Errorf("snapshot: detached call %s: pre-scan manifest: %w", rec.ID, err)
		}
		if pre, err = decodeIndex(data); err != nil {
			return Entry{}, fmt.Errorf("snapshot: detached call %s: pre-scan manifest: %v: %w", rec.ID, err, ErrCorrupt)
		}
	}
	if rec.FinalID != "" && s.entryExists(rec.FinalID) {
		// Committed by an attempt that died before dropping the record.
		e, err := s.readEntry(rec.FinalID)
		if err != nil {
			return Entry{}, err
		}
		return e, s.dropDetached(rec.ID)
	}
	// Paths that entries committed since the call began changed.
	first, _ := parseID(rec.ID)
	ids, err := s.ids("journal")
	if err != nil {
		return Entry{}, err
	}
	type span struct {
		first, last *Node
		gap         bool // one of them starts from a state the one before did not leave
	}
	taken := map[string]*span{} // path → its state before the first and after the last of them
	var order []string
	var since []Entry
	for _, id := range ids {
		if n, _ := parseID(id); n <= first {
			continue
		}
		oe, err := s.readEntry(id)
		if err != nil {
			return Entry{}, err
		}
		since = append(since, oe)
		for _, ch := range oe.Changes {
			if sp := taken[ch.Path]; sp != nil {
				sp.gap = sp.gap || !sameContent(sp.last, ch.Old)
				sp.last = ch.New
			} else {
				taken[ch.Path] = &span{first: ch.Old, last: ch.New}
				order = append(order, ch.Path)
			}
		}
	}
	cur, err := s.loadIndex()
	if err != nil {
		return Entry{}, err
	}
	post, err := s.scan(ctx, cur)
	if err != nil {
		return Entry{}, err
	}
	s.hookCall("detached-scanned", rec.ID)
	// The record's own ID when nothing was journaled since it began (the
	// entry then sorts where it started); else the next one.
	id := rec.ID
	if len(ids) > 0 {
		if n, _ := parseID(ids[len(ids)-1]); n > first {
			if id, err = s.nextID(); err != nil {
				return Entry{}, err
			}
		}
	}
	e := Entry{ID: id, Time: s.opts.now().UTC(), CallInfo: rec.info(), Kind: KindCall, Interrupted: interrupted,
		Detached: true, Began: rec.Time}
	if rec.Shell {
		// A foreground call: its time is when it began, as for any call.
		e.Time, e.Detached, e.Began = rec.Time, false, time.Time{}
	}
	for _, ch := range diffIndex(pre, post) {
		if taken[ch.Path] == nil {
			e.Changes = append(e.Changes, ch)
		}
	}
	sort.Strings(order)
	for _, p := range order {
		sp := taken[p]
		if !sameContent(nodeOf(pre.entries[p]), sp.first) || sp.gap {
			// Changed before another call took the path over, or
			// between two of them: that call's entry starts from the
			// command's version.
			e.Overlapped = append(e.Overlapped, p)
		}
		// Changed again after the last of them: that part is the job's.
		if now := nodeOf(post.entries[p]); !sameContent(sp.last, now) {
			if ch, ok := classify(p, sp.last, now); ok {
				e.Changes = append(e.Changes, ch)
			}
		}
	}
	sort.Slice(e.Changes, func(i, j int) bool { return e.Changes[i].Path < e.Changes[j].Path })
	var gerr error
	if e.Changes, e.Reverted, gerr = s.guard(ctx, id, e.Changes, keep, post); gerr != nil {
		e.RevertError = gerr.Error()
	}
	if len(live) > 0 {
		e.Reverted = append(live, e.Reverted...)
	}
	// The entry's ID is recorded before the commit so that recovery never
	// journals the call twice.
	rec.FinalID = id
	if err := s.writePending(rec); err != nil {
		return Entry{}, err
	}
	if err := s.commitEntry(e); err != nil {
		return Entry{}, err
	}
	if post != cur {
		if _, err := s.saveIndex(post); err != nil {
			s.opts.log.Warn("snapshot: saving manifest", "err", err)
		}
	}
	s.hook("detached-committed")
	if err := s.dropDetached(rec.ID); err != nil {
		return e, err
	}
	s.dropManifest(rec, post, since)
	return e, nil
}

// dropManifest removes the pre-scan manifest blob of a finished detached
// call when the call made it (BeginDetached found no such blob) and
// nothing else refers to it: an open detached call's record, a
// checkpoint, or a change journaled since the call began (earlier ones
// cannot: the blob did not exist), or the tree now. Otherwise GC does.
// Under the store lock, after the call's record is gone.
func (s *Store) dropManifest(rec *pendingRec, post *index, since []Entry) {
	h := rec.Manifest
	if !rec.OwnManifest || !validHash(h) {
		return
	}
	for _, id := range s.openDetached() {
		if r, err := s.readPending(id); err != nil || r.Manifest == h {
			return // unreadable: keep it, to be safe
		}
	}
	for _, e := range since {
		if e.Manifest == h {
			return
		}
		for _, ch := range e.Changes {
			if ch.Old != nil && ch.Old.Hash == h || ch.New != nil && ch.New.Hash == h {
				return
			}
		}
	}
	if post != nil {
		for _, ie := range post.entries {
			if ie.Hash == h {
				return
			}
		}
	}
	for _, name := range []string{s.blobPath(h), s.blobPath(h) + zSuffix} {
		if fi, err := os.Lstat(name); err == nil && os.Remove(name) == nil {
			s.added.Add(-fi.Size())
		}
	}
}

// openDetached lists the IDs of pending detached records.
func (s *Store) openDetached() []string {
	ids, _ := s.ids("pending")
	var out []string
	for _, id := range ids {
		if r, err := s.readPending(id); err != nil || r.Detached {
			out = append(out, id)
		}
	}
	return out
}

func (s *Store) dropDetached(id string) error {
	os.Remove(s.livePath(id))
	return s.removePending(id)
}

// openDetachedRefs returns the blobs the pre-scan manifests of open
// detached calls reference (GC keeps them). Runs under the store lock.
func (s *Store) openDetachedRefs() []string {
	ids, _ := s.ids("pending")
	var hs []string
	for _, id := range ids {
		rec, err := s.readPending(id)
		if err != nil || !rec.Detached || rec.Manifest == "" {
			continue
		}
		hs = append(hs, rec.Manifest)
		if data, err := s.readBlob(rec.Manifest); err == nil {
			if m, err := decodeIndex(data); err == nil {
				for _, me := range m.entries {
					if me.Hash != "" {
						hs = append(hs, me.Hash)
					}
				}
			}
		}
	}
	return hs
}
