package snapshot

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Change capture modes (WithChangeCapture).
const (
	// CaptureAuto follows the kernel's change reports where agentbox has
	// the privilege (fanotify needs CAP_SYS_ADMIN) and scans everything
	// otherwise.
	CaptureAuto = "auto"
	// CaptureScan scans the whole workspace before and after every call.
	CaptureScan = "scan"
)

// WithChangeCapture selects how scans find what changed: CaptureScan (the
// default for Open) walks the whole tree every time; CaptureAuto starts a
// watcher (see capture) and re-examines only what the kernel reported,
// falling back to the full walk whenever the watcher cannot vouch for a
// scan.
func WithChangeCapture(mode string) Option { return func(o *options) { o.capture = mode } }

// WithCaptureCheck sets how often an incremental capture is checked
// against a full scan: every n incremental scans or after d, whichever
// comes first (0 disables that trigger; both 0: never). The defaults are
// 100 and 10 minutes.
func WithCaptureCheck(n int, d time.Duration) Option {
	return func(o *options) { o.checkEvery, o.checkAfter = n, d }
}

// CaptureStats counts how scans were made since the store was opened. It
// is what `agentbox doctor` reports about change capture.
type CaptureStats struct {
	// Mode is the mode in effect: "watch" (a watcher runs), or "scan"
	// with Reason saying why not when auto was asked for.
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
	// Full and Incremental count scans of each kind; Checks counts the
	// full scans that verified an incremental one and Mismatches those
	// that disagreed (the full result was used). LastFull says why the
	// last full scan was needed.
	Full        int64  `json:"full"`
	Incremental int64  `json:"incremental"`
	Checks      int64  `json:"checks"`
	Mismatches  int64  `json:"mismatches"`
	LastFull    string `json:"last_full,omitempty"`
	// Events is how many fanotify events the watcher read (the whole
	// filesystem's), Inside how many named a workspace path, Resolves
	// how many handles it had to open.
	// ScanTime is the time spent in scans (full and incremental, checks
	// included).
	ScanTime time.Duration `json:"scan_ns"`
	Events   int64         `json:"events"`
	Inside   int64         `json:"inside"`
	Resolves int64         `json:"resolves"`
}

// capture is a store's change capture: the watcher and the index it can
// vouch for.
type capture struct {
	mu     sync.Mutex // held for a whole scan
	w      *watcher   // nil: full scans only
	reason string     // why there is no watcher
	// base is the last index this capture produced while its watcher ran
	// with nothing lost since; revisit lists its entries that a full scan
	// would look at again whatever the events say (racy mtimes, unreadable
	// or unstored content).
	base    *index
	revisit map[string]struct{}

	// saved is the index this process wrote last and its hash: an index
	// read back from disk with that hash is base's content (a checkpoint
	// hard-links the file, which changes its ctime and makes loadIndex
	// read it again).
	saved atomic.Pointer[savedIndex]
	// baseHash is the manifest hash of base when base is the index read
	// from disk and a full scan found it unchanged (so nothing of this
	// process saved it): that file read back again, e.g. after a detached
	// call hard-linked it (its ctime changes), is base's content.
	baseHash string

	// spare is a copy of base's map made in the background after the
	// scan that produced base: the next scan that changes something takes
	// it instead of copying the whole manifest while the caller waits.
	spare *spareMap

	sinceCheck int
	lastCheck  time.Time
	stats      CaptureStats
}

type spareMap struct {
	src  *index
	of   unsafe.Pointer // the map it copies (a caller may swap src's map)
	m    map[string]*ientry
	done chan struct{}
}

// prepareSpare starts copying base's map, unless a copy of it exists.
func (c *capture) prepareSpare() {
	if c.base == nil {
		c.spare = nil
		return
	}
	if !c.spare.copies(c.base) {
		c.spare = newSpare(c.base)
	}
}

// takeSpare returns the copy of base's map if one was made (waiting for
// it to finish), or nil.
func (c *capture) takeSpare(base *index) map[string]*ientry {
	if !c.spare.copies(base) {
		return nil
	}
	m := c.spare.wait()
	c.spare = nil
	return m
}

// newSpare starts copying ix's map in the background.
func newSpare(ix *index) *spareMap {
	m := ix.entries
	sp := &spareMap{src: ix, of: reflect.ValueOf(m).UnsafePointer(), done: make(chan struct{})}
	go func() {
		sp.m = maps.Clone(m)
		close(sp.done)
	}()
	return sp
}

// copies reports whether sp (nil: none) is a copy of ix's current map:
// made from ix, and ix still holds that very map (indexes are never
// written in place once made; a caller that changes one swaps its map
// first).
func (sp *spareMap) copies(ix *index) bool {
	return sp != nil && sp.src == ix && sp.of == reflect.ValueOf(ix.entries).UnsafePointer()
}

// wait returns the copy once it is made.
func (sp *spareMap) wait() map[string]*ientry {
	<-sp.done
	return sp.m
}

type savedIndex struct {
	ix   *index
	hash string
}

// startCapture starts the store's change capture (opts.capture).
func (s *Store) startCapture() {
	c := &capture{}
	s.cap = c
	if s.opts.capture != CaptureAuto {
		c.reason = "change_capture is scan"
		return
	}
	if unix.Geteuid() != 0 {
		// fanotify_init says EPERM without CAP_SYS_ADMIN; not worth the log.
		c.reason = "fanotify needs CAP_SYS_ADMIN"
	}
	w, err := startWatcher(s.workspace)
	if err != nil {
		if c.reason == "" {
			c.reason = err.Error()
		}
		s.opts.log.Info("snapshot: change capture falls back to full scans", "err", err)
		return
	}
	c.w, c.reason = w, ""
}

// stopCapture stops the watcher.
func (s *Store) stopCapture() {
	c := s.cap
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		c.w.close()
		c.w, c.base, c.reason = nil, nil, "store closed"
	}
}

// CaptureStats returns the change capture's counters.
func (s *Store) CaptureStats() CaptureStats {
	c := s.cap
	if c == nil {
		return CaptureStats{Mode: "scan"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Mode, st.Reason = "scan", c.reason
	if c.w != nil {
		st.Mode = "watch"
		st.Events, st.Inside, st.Resolves = c.w.counters()
	}
	return st
}

// trusted reports whether old is base or a clone of it made in this
// process (a file-scoped call's or a restore's update: every path such a
// clone changed was changed on disk after base was scanned, so the
// watcher reported it).
func (c *capture) trusted(old *index) bool {
	if c.base == nil {
		return false
	}
	return old == c.base || old.from == c.base
}

// sameAsBase reports whether old, read back from disk, is what this
// process saved of base (the same manifest hash).
func (s *Store) sameAsBase(old *index) bool {
	c := s.cap
	if c.base != nil && c.baseHash != "" && s.manifestHash(old) == c.baseHash {
		return true
	}
	sv := c.saved.Load()
	if c.base == nil || sv == nil || sv.ix != c.base {
		return false
	}
	h := s.manifestHash(old)
	return h != "" && h == sv.hash
}

// scan returns the workspace's manifest, storing blobs of every file
// whose stat differs from old (nothing differs: old itself). With a
// watcher that vouches for what changed since it produced old (or the
// index old was cloned from), only the paths it reported are looked at
// again; otherwise the whole tree is walked.
func (s *Store) scan(ctx context.Context, old *index) (*index, error) {
	c := s.cap
	if c == nil {
		return s.fullScan(ctx, old)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	defer func() { c.stats.ScanTime += time.Since(start) }()
	if c.w == nil {
		c.stats.Full++
		return s.fullScan(ctx, old)
	}
	dirty, lost := c.w.take()
	why := lost
	switch {
	case why != "":
	case !c.trusted(old) && !s.sameAsBase(old):
		why = "no index this watcher vouches for"
	case len(dirty) > len(c.base.entries)/2+1024:
		why = fmt.Sprintf("%d paths changed", len(dirty))
	default:
		why = captureCheckMounts(s.workspace)
	}
	if why != "" {
		c.base = nil
		res, err := s.fullScan(ctx, old)
		if err != nil {
			return nil, err
		}
		c.stats.Full++
		c.stats.LastFull = why
		c.setBase(res)
		c.baseHash = s.manifestHash(res) // "" unless res is the index read from disk
		c.prepareSpare()
		return res, nil
	}
	base := c.base
	c.base = nil // until this scan succeeds
	if old != base && s.sameAsBase(old) {
		// The same content: old stands for base (its entries are the stat
		// cache, and it is returned when nothing changed).
		base = old
	}
	// One moment for the racy-mtime test of this scan and of its check:
	// a second boundary passing between them would make the check call
	// a file not racy that the incremental scan rightly called racy (a
	// mismatch without a missed change).
	racyAt := s.opts.now().Truncate(time.Second).UnixNano()
	res, delta, err := s.incrementalScan(ctx, old, base, dirty, c.revisit, racyAt)
	if err != nil {
		return nil, err
	}
	c.stats.Incremental++
	c.sinceCheck++
	now := s.opts.now()
	if (s.opts.checkEvery > 0 && c.sinceCheck >= s.opts.checkEvery) || (s.opts.checkAfter > 0 && now.Sub(c.lastCheck) >= s.opts.checkAfter) {
		full, err := s.fullScanAt(ctx, old, racyAt)
		if err != nil {
			return nil, err
		}
		c.stats.Checks++
		diff := indexDiffPaths(res, full, 20)
		s.noteCheck(diff)
		if len(diff) > 0 {
			c.stats.Mismatches++
			s.opts.log.Warn("snapshot: change capture missed changes; using the full scan", "paths", diff)
			c.setBase(full)
			c.prepareSpare()
			return full, nil
		}
		c.sinceCheck, c.lastCheck = 0, now
	}
	c.applyDelta(res, delta)
	c.baseHash = s.manifestHash(res) // "" unless nothing changed since the index read from disk
	c.prepareSpare()
	return res, nil
}

// setBase makes a full scan's result the base: the revisit set and the
// watcher's inode map are rebuilt from it.
func (c *capture) setBase(ix *index) {
	c.base, c.baseHash = ix, ""
	c.revisit = map[string]struct{}{}
	inodes := make(map[uint64][]string, len(ix.entries))
	for p, e := range ix.entries {
		if needsRevisit(e) {
			c.revisit[p] = struct{}{}
		}
		if e.Type == TypeFile {
			inodes[e.ino] = append(inodes[e.ino], p)
		}
	}
	c.w.setInodes(inodes)
	c.sinceCheck = 0
	c.lastCheck = time.Now()
}

// applyDelta makes an incremental result the base, updating the revisit
// set and the inode map by what the scan looked at.
func (c *capture) applyDelta(ix *index, d *scanDelta) {
	c.base, c.baseHash = ix, ""
	for _, ch := range d.gone {
		delete(c.revisit, ch.path)
	}
	for _, ch := range d.set {
		if needsRevisit(ch.e) {
			c.revisit[ch.path] = struct{}{}
		} else {
			delete(c.revisit, ch.path)
		}
	}
	c.w.updateInodes(func(m map[uint64][]string) {
		drop := func(ino uint64, p string) {
			ps := m[ino]
			for i, q := range ps {
				if q == p {
					ps = append(ps[:i:i], ps[i+1:]...)
					break
				}
			}
			if len(ps) == 0 {
				delete(m, ino)
			} else {
				m[ino] = ps
			}
		}
		for _, ch := range d.gone {
			if ch.e != nil && ch.e.Type == TypeFile {
				drop(ch.e.ino, ch.path)
			}
		}
		for _, ch := range d.set {
			if ch.prev != nil && ch.prev.Type == TypeFile {
				drop(ch.prev.ino, ch.path)
			}
			if ch.e.Type == TypeFile {
				m[ch.e.ino] = append(m[ch.e.ino], ch.path)
			}
		}
	})
}

func needsRevisit(e *ientry) bool { return e.racy || e.Unreadable || e.Unstored }

// scanDelta is what an incremental scan changed in its base.
type scanDelta struct {
	set  []pathEntry // recorded (prev: base's entry, if any)
	gone []pathEntry // dropped (e: base's entry)
}

type pathEntry struct {
	path    string
	e, prev *ientry
}

// excludedPath reports whether rel or one of its parents is excluded from
// scans (WithExclude): the manifest knows nothing of it. memo caches the
// answer per directory across calls.
func (s *Store) excludedPath(rel string, memo map[string]bool) bool {
	if len(s.opts.exclude) == 0 {
		return false
	}
	for p := rel; p != ""; p, _ = splitRel(p) {
		v, ok := memo[p]
		if !ok {
			v = s.excluded(p)
			memo[p] = v
		}
		if v {
			return true
		}
	}
	return false
}

// pathsOf returns the paths the inode map knows for ino.
func (c *capture) pathsOf(ino uint64) []string {
	if c.w == nil {
		return nil
	}
	return c.w.pathsOf(ino)
}

// indexDiffPaths lists up to max paths whose entries differ between a
// and b (stat fields included).
func indexDiffPaths(a, b *index, max int) []string {
	var out []string
	for p, e := range a.entries {
		if f := b.entries[p]; f != e && !entryEqual(e, f) {
			out = append(out, p)
		}
	}
	for p := range b.entries {
		if _, ok := a.entries[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}
