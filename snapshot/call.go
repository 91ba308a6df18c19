package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Call is one mutating call between Begin and Finish or Abort. A Call
// belongs to one goroutine.
//
// A file-scoped call holds the store lock from Begin to Finish (the
// duration of one file write). A whole-workspace call holds the shell lock
// from Begin to Finish and the store lock only while it scans (see the
// package documentation); [WithSerialCalls] makes it hold the store lock
// throughout instead.
type Call struct {
	s      *Store
	rec    pendingRec
	pre    *index           // whole scope, serial: manifest before the call
	paths  []string         // file scope: paths recorded
	before map[string]*Node // file scope: their pre-images (nil = absent)
	unlock func()           // the store lock (file scope; whole scope, serial)
	// Whole scope: the shell lock, and (unless serial) the capture, a
	// detached call whose command is this call's.
	unshell func()
	shell   *Detached
	done    bool
	keep    KeepFunc // SetKeep
	// durable is closed once the pending record is on the disk (at once
	// unless the scope is Staged); durErr is why it could not be.
	durable chan struct{}
	durErr  error
	staged  bool
}

// Durable waits until the call's pending record is on the disk: only then
// may a Staged call's change become visible. It is immediate for a call
// that is not Staged. An error means the change must not be made.
func (c *Call) Durable(ctx context.Context) error {
	if c.durable == nil {
		return nil
	}
	select {
	case <-c.durable: // done already: ctx does not matter
		return c.durErr
	default:
	}
	select {
	case <-c.durable:
		return c.durErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Staged reports whether Begin returned before the pending record was on
// the disk ([Scope].Staged, and the file's parent directory exists): the
// caller must wait for Durable before its change becomes visible.
func (c *Call) Staged() bool { return c.staged }

// settle waits for the pending record's fsync, whatever it gives.
func (c *Call) settle() {
	if c.durable != nil {
		<-c.durable
	}
}

// pendingRec is the durable record of work in progress; recovery reads it
// after a crash.
type pendingRec struct {
	ID         string       `json:"id"`
	Kind       Kind         `json:"kind"`
	Time       time.Time    `json:"time"`
	Session    string       `json:"session"`
	Tool       string       `json:"tool"`
	Summary    string       `json:"summary"`
	Phase      string       `json:"phase"` // "prepare" (nothing changed yet) or "running"
	Whole      bool         `json:"whole,omitempty"`
	Pre        []diskChange `json:"pre,omitempty"`  // file scope: Path, Old = pre-image
	Plan       []diskChange `json:"plan,omitempty"` // restore: Path, Old = before, New = target
	Reverts    string       `json:"reverts,omitempty"`
	RollbackTo string       `json:"rollback_to,omitempty"`
	Force      bool         `json:"force,omitempty"`
	// Detached calls (see Detached): the pre-scan manifest's blob, and the
	// journal ID allocated for the entry just before it is committed.
	Detached bool   `json:"detached,omitempty"`
	Manifest string `json:"manifest,omitempty"`
	FinalID  string `json:"final_id,omitempty"`
	// Shell marks the detached record of a foreground whole-workspace
	// Call (it holds the shell lock while it runs; its entry is not
	// marked Detached).
	Shell bool `json:"shell,omitempty"`
	// OwnManifest says the call made the Manifest blob (it did not exist):
	// it is removed when the call ends unless something else refers to it.
	OwnManifest bool `json:"own_manifest,omitempty"`
}

const (
	phasePrepare = "prepare"
	phaseRunning = "running"
)

func (r *pendingRec) info() CallInfo {
	return CallInfo{Session: r.Session, Tool: r.Tool, Summary: r.Summary}
}

func (s *Store) writePending(r *pendingRec) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := writeFileNew(s.path("pending", r.ID+".json"), data, 0o600); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

func (s *Store) readPending(id string) (pendingRec, error) {
	var rec pendingRec
	data, err := os.ReadFile(s.path("pending", id+".json"))
	if err != nil {
		return rec, err
	}
	err = json.Unmarshal(data, &rec)
	return rec, err
}

func (s *Store) removePending(id string) error {
	// No directory fsync: a record that comes back after a power loss
	// belongs to a committed entry, or to nothing, and recovery drops it.
	if err := os.Remove(s.path("pending", id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// relPath turns a scope path into a clean workspace-relative slash path.
func (s *Store) relPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(s.workspace, filepath.Clean(p))
		if err != nil || !filepath.IsLocal(rel) {
			return "", fmt.Errorf("snapshot: %s: %w", p, ErrOutside)
		}
		p = rel
	}
	p = filepath.ToSlash(filepath.Clean(p))
	if p == "." || !filepath.IsLocal(p) {
		return "", fmt.Errorf("snapshot: %q: %w", p, ErrOutside)
	}
	return p, nil
}

// Begin starts a mutating call and takes the pre-image of scope. The
// returned [Call] must be finished with Finish (the tool ran, or may have)
// or Abort (nothing ran).
//
// A file scope waits for the store lock, which it holds until Finish or
// Abort. A whole scope waits for the shell lock (another whole-workspace
// call's Finish), takes the pre-scan under the store lock and releases
// that lock: file-scoped calls, undo and rollback go on while its command
// runs. Both waits end when ctx is done.
func (s *Store) Begin(ctx context.Context, info CallInfo, scope Scope) (*Call, error) {
	var rel string
	if scope.Path != "" {
		var err error
		if rel, err = s.relPath(scope.Path); err != nil {
			return nil, err
		}
		if s.symlinkOnPath(rel) {
			rel = "" // a write through a symlink may land anywhere: scan it all
		}
	}
	var unshell func()
	if rel == "" {
		var err error
		if unshell, err = s.lockShell(ctx); err != nil {
			return nil, err
		}
		if !s.opts.serial {
			d, err := s.beginDetached(ctx, info, true)
			if err != nil {
				unshell()
				return nil, err
			}
			return &Call{s: s, rec: d.rec, shell: d, unshell: unshell}, nil
		}
	}
	fail := func(err error) (*Call, error) {
		if unshell != nil {
			unshell()
		}
		return nil, err
	}
	lock := s.lock
	if unshell != nil {
		lock = s.lockShelled
	}
	unlock, err := lock(ctx)
	if err != nil {
		return fail(err)
	}
	// The first whole scan records the baseline: not capped per call.
	done, err := s.startBudget(rel != "" || s.hasIndex(), false)
	if err != nil {
		unlock()
		return fail(err)
	}
	c, err := s.begin(ctx, info, rel, scope.Staged)
	done()
	if err != nil {
		unlock()
		return fail(err)
	}
	c.unlock, c.unshell = unlock, unshell
	return c, nil
}

func (s *Store) begin(ctx context.Context, info CallInfo, rel string, staged bool) (*Call, error) {
	id, err := s.nextID()
	if err != nil {
		return nil, err
	}
	c := &Call{s: s, rec: pendingRec{ID: id, Kind: KindCall, Time: s.opts.now().UTC(), Session: info.Session, Tool: info.Tool, Summary: info.Summary, Phase: phasePrepare}}
	c.rec.Whole = rel == ""
	// Nothing is written until the pre-image is taken: a crash before that
	// point leaves nothing to complete.
	s.hook("begin-pending")
	fail := func(err error) (*Call, error) {
		s.removePending(id)
		return nil, err
	}
	if c.rec.Whole {
		old, err := s.loadIndex()
		if err != nil {
			return fail(err)
		}
		pre, err := s.scan(ctx, old)
		if err != nil {
			return fail(err)
		}
		s.guardDrift(ctx, id, old, pre)
		s.hook("begin-scanned")
		if pre != old {
			if _, err := s.saveIndex(pre); err != nil {
				return fail(err)
			}
		}
		c.pre = pre
	} else {
		rootfd, err := s.openRoot()
		if err != nil {
			return fail(err)
		}
		defer unix.Close(rootfd)
		c.before = map[string]*Node{}
		var chain []string
		for p := rel; p != ""; p, _ = splitRel(p) {
			chain = append(chain, p)
		}
		s.guardTakeover(ctx, id, chain)
		// The target, and every missing parent the tool may create.
		s.hookCall("file-pre", id)
		err = func() error {
			for p := rel; p != ""; p, _ = splitRel(p) {
				e, err := s.statPath(rootfd, p, nil)
				if err != nil {
					return err
				}
				if e != nil && p != rel {
					break
				}
				c.paths = append(c.paths, p)
				c.before[p] = nodeOf(e)
				c.rec.Pre = append(c.rec.Pre, diskChange{Path: rawString(p), Old: toDiskNode(nodeOf(e))})
			}
			return nil
		}()
		s.hookCall("file-pre-done", id)
		if err != nil {
			return fail(err)
		}
		if err := s.takeoverStale(c.before); err != nil {
			return fail(err)
		}
	}
	c.rec.Phase = phaseRunning
	// Pre-images and the manifest durable before the record that says the
	// call is running.
	if err := s.syncStore(); err != nil {
		return fail(err)
	}
	if staged && len(c.paths) == 1 {
		// Only when the parent exists: a directory the call creates would
		// be visible before its contents (see initproc.WriteGated).
		data, err := json.Marshal(&c.rec)
		if err != nil {
			return fail(err)
		}
		name := s.path("pending", c.rec.ID+".json")
		if err := writeFileRename(name, data, 0o600, false); err != nil {
			return fail(fmt.Errorf("snapshot: %w", err))
		}
		c.durable, c.staged = make(chan struct{}), true
		go func() {
			defer close(c.durable)
			s.hook("staged-sync")
			c.durErr = syncNew(name)
		}()
		s.hook("begin-done")
		return c, nil
	}
	if err := s.writePending(&c.rec); err != nil {
		return fail(err)
	}
	s.hook("begin-done")
	return c, nil
}

// symlinkOnPath reports whether rel or one of its parents is a symlink.
func (s *Store) symlinkOnPath(rel string) bool {
	cur := s.workspace
	for _, comp := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, comp)
		fi, err := os.Lstat(cur)
		if err != nil {
			return false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// ID is the journal ID reserved for the call's entry. After a successful
// Finish it is the entry's ID, which differs from the reserved one when a
// whole-workspace call's command ran while other entries were journaled
// (its entry then sorts after them).
func (c *Call) ID() string { return c.rec.ID }

// Finish records what the call changed and journals it. If it fails, the
// call stays pending and is completed by recovery the next time the store
// is locked; the locks are released either way.
func (c *Call) Finish(ctx context.Context) (Entry, error) {
	if c.done {
		return Entry{}, errors.New("snapshot: call already finished")
	}
	c.done = true
	if c.unshell != nil {
		defer c.unshell()
	}
	if c.shell != nil {
		d := c.shell
		d.mu.Lock()
		defer d.mu.Unlock()
		d.keep = c.keep
		e, err := d.finish(ctx)
		if err != nil {
			// Like any call's: completed by recovery at the next lock.
			d.done = true
			d.release()
			return Entry{}, err
		}
		c.rec.ID = e.ID
		return e, nil
	}
	defer c.unlock()
	// The record must be on the disk before the entry replaces it.
	c.settle()
	e, err := c.s.finishCall(ctx, &c.rec, c.pre, false, c.keep)
	if err == nil {
		c.s.maybeGC(ctx)
	}
	return e, err
}

// finishCall computes and commits a call's changeset. pre is the whole
// manifest before the call (nil: load the saved one).
func (s *Store) finishCall(ctx context.Context, rec *pendingRec, pre *index, interrupted bool, keep KeepFunc) (Entry, error) {
	done, _ := s.startBudget(true, true) // the call ran: over a limit is Unstored, not an error
	defer done()
	e := Entry{ID: rec.ID, Time: rec.Time, CallInfo: rec.info(), Kind: KindCall, Interrupted: interrupted}
	var post *index
	if rec.Whole {
		if pre == nil {
			var err error
			if pre, err = s.loadIndex(); err != nil {
				return Entry{}, err
			}
		}
		var err error
		post, err = s.scan(ctx, pre)
		if err != nil {
			return Entry{}, err
		}
		s.hook("finish-scanned")
		e.Changes = diffIndex(pre, post)
	} else {
		rootfd, err := s.openRoot()
		if err != nil {
			return Entry{}, err
		}
		defer unix.Close(rootfd)
		updates := map[string]*ientry{}
		s.hookCall("file-post", rec.ID)
		err = func() error {
			for _, d := range rec.Pre {
				p := string(d.Path)
				after, err := s.statPath(rootfd, p, nil)
				if err != nil {
					return err
				}
				updates[p] = after
				if ch, ok := classify(p, fromDiskNode(d.Old), nodeOf(after)); ok {
					e.Changes = append(e.Changes, ch)
				}
			}
			return nil
		}()
		s.hookCall("file-post-done", rec.ID)
		if err != nil {
			return Entry{}, err
		}
		if ix, err := s.loadIndex(); err == nil && s.hasIndex() {
			post = s.updateManifest(ix, updates) // saved as a delta record
		}
	}
	var gerr error
	if e.Changes, e.Reverted, gerr = s.guard(ctx, rec.ID, e.Changes, keep, post); gerr != nil {
		e.RevertError = gerr.Error()
	}
	// A live file-scoped call commits without waiting for the disk
	// (commitLazyEntry); a whole-workspace call, or one recovery
	// completes, commits durably at once.
	lazy := !rec.Whole && !interrupted
	var lc lazyCommit
	if lazy {
		var err error
		if lc.entry, lc.deps, err = s.commitLazyEntry(e); err != nil {
			return Entry{}, err
		}
		lc.id = rec.ID
	} else if err := s.commitCallEntry(e); err != nil {
		return Entry{}, err
	}
	if post != nil && post != pre {
		if _, err := s.saveIndex(post); err != nil {
			s.opts.log.Warn("snapshot: saving manifest", "err", err)
		} else if !rec.Whole {
			s.prepareUpdSpare(post)
		}
	}
	s.hook("finish-indexed")
	if lazy {
		// The manifest just saved goes with the entry's flush.
		lc.deps = append(lc.deps, s.takeUnsynced()...)
		s.flushLater(lc)
	} else {
		s.retirePending(rec.ID)
	}
	return e, nil
}

// Abort ends a call that did not run: nothing is journaled.
func (c *Call) Abort(ctx context.Context) error {
	if c.done {
		return nil
	}
	c.done = true
	if c.unshell != nil {
		defer c.unshell()
	}
	if c.shell != nil {
		return c.shell.Abort(ctx)
	}
	defer c.unlock()
	c.settle()
	return c.s.removePending(c.rec.ID)
}
