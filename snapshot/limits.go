package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// How the store keeps the host's disk from filling:
//
//   - Per-call cap (WithMaxCallBytes): the new content one call stores
//     (bytes before compression; content already in the store costs
//     nothing). Before a call runs (Begin, BeginDetached) going over it
//     refuses the call with ErrTooLarge: a call must not run without its
//     pre-images, and refusing costs nothing but the call, which changed
//     nothing yet. After a call ran (Finish) it cannot be refused any
//     more: content over the cap is hashed but not kept, the node is
//     marked Unstored (it compares like any file, so the changeset and
//     later conflicts stay exact, but that state cannot be restored), and
//     the next scan reads the file again, so the next call's Begin stores
//     it or is refused. Writing stops at the cap: a call never stores more
//     than the cap. The first whole scan of a workspace (no manifest yet)
//     and checkpoints are not capped: they record the baseline a person
//     asked for.
//   - Free-space floor (WithMinFreeBytes): a call is refused with
//     ErrNoSpace when the filesystem of the store has less free space
//     than the floor, and the content a call may store is capped so it
//     does not go below it (refused before the call, Unstored after).
//   - Automatic GC (WithAutoGC): a running total of the store's content
//     (kept in the file "usage", updated under the store lock as blobs are
//     written, recounted once after a crash) is compared with the
//     policy's MaxBytes after every journaled call, undo, rollback and
//     checkpoint; past it, GC runs with a target of 90% of MaxBytes,
//     dropping the oldest entries first by the rules of GC. When the
//     current tree alone is larger than that, the next automatic GC waits
//     until the store grew by another tenth of MaxBytes.

// LimitError is why a snapshot would pass a limit. It wraps [ErrTooLarge]
// or [ErrNoSpace]; its text is written for a person and names the setting.
type LimitError struct {
	Err error // ErrTooLarge or ErrNoSpace
	// Path is the file being stored when the limit was reached, if any.
	Path string
	// Limit is the per-call cap (ErrTooLarge) or the content the call
	// could still store above the floor (ErrNoSpace).
	Limit int64
	// Free and Floor are the free space and the floor (ErrNoSpace).
	Free, Floor int64
	// Dir is the store's directory.
	Dir string
	// after is set when the limit was reached after the call ran: the
	// content is then recorded as Unstored instead.
	after bool
}

func (e *LimitError) Error() string {
	where := ""
	if e.Path != "" {
		where = " (at " + quotePath(e.Path) + ")"
	}
	if errors.Is(e.Err, ErrTooLarge) {
		return fmt.Sprintf("snapshot: the call would need to store more than %s of new content before it runs%s, over snapshot.max_call_bytes, so it was not run and nothing was changed; "+
			"exclude large generated files (snapshot.exclude), record the current tree with `agentbox checkpoint` (not capped), or raise snapshot.max_call_bytes",
			humanBytes(e.Limit), where)
	}
	if e.Limit > 0 {
		return fmt.Sprintf("snapshot: storing this call's snapshot%s would leave less than snapshot.min_free_bytes (%s) free on the filesystem of %s (%s free), so it was not run and nothing was changed; "+
			"free space with `agentbox snapshots gc` (or a lower snapshot.max_bytes), free disk space, or lower snapshot.min_free_bytes",
			where, humanBytes(e.Floor), e.Dir, humanBytes(e.Free))
	}
	return fmt.Sprintf("snapshot: only %s free on the filesystem of %s, below snapshot.min_free_bytes (%s), so the call was not run and nothing was changed; "+
		"free space with `agentbox snapshots gc` (or a lower snapshot.max_bytes), free disk space, or lower snapshot.min_free_bytes",
		humanBytes(e.Free), e.Dir, humanBytes(e.Floor))
}

func (e *LimitError) Unwrap() error { return e.Err }

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// WithMaxCallBytes caps the new content one call may store (see
// [LimitError]); 0 means no cap.
func WithMaxCallBytes(n int64) Option { return func(o *options) { o.maxCall = n } }

// WithMinFreeBytes refuses calls when the store's filesystem has less
// free space than n bytes, and caps what a call stores so that it stays
// above; 0 means no floor.
func WithMinFreeBytes(n int64) Option { return func(o *options) { o.minFree = n } }

// WithAutoGC runs GC when the store passes p.MaxBytes after a call is
// journaled (only the size limit is applied automatically; KeepCalls and
// MaxAge apply at an explicit GC). A zero MaxBytes turns it off.
func WithAutoGC(p GCPolicy) Option { return func(o *options) { o.autoGC = p.MaxBytes } }

// withFreeSpace injects the free-space probe (tests).
func withFreeSpace(fn func(dir string) (int64, error)) Option {
	return func(o *options) { o.freeSpace = fn }
}

// statfsFree is the space available to unprivileged users on dir's
// filesystem.
func statfsFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// budget bounds the new content one operation stores. Safe for
// concurrent use by scan workers.
type budget struct {
	limit int64 // < 0: none
	used  atomic.Int64
	base  LimitError // template of the error when the limit is reached
}

// reserve takes n bytes, or reports that they would pass the limit.
func (b *budget) reserve(n int64) bool {
	if b == nil || b.limit < 0 {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *budget) release(n int64) {
	if b != nil && b.limit >= 0 {
		b.used.Add(-n)
	}
}

func (b *budget) exceeded() *LimitError {
	e := b.base
	return &e
}

// startBudget installs the budget of one operation (under the lock) and
// returns the function that removes it. capped applies the per-call cap;
// after says the call already ran (so the limits mark content Unstored
// instead of failing). Before a call, a filesystem already below the floor
// is an error.
func (s *Store) startBudget(capped, after bool) (func(), error) {
	b := &budget{limit: -1}
	b.base = LimitError{Err: ErrTooLarge, Dir: s.dir, after: after}
	if capped && s.opts.maxCall > 0 {
		b.limit = s.opts.maxCall
		b.base.Limit = s.opts.maxCall
	}
	if s.opts.minFree > 0 {
		free, err := s.opts.freeSpace(s.dir)
		if err != nil {
			if !after {
				return nil, fmt.Errorf("snapshot: free space of %s: %w", s.dir, err)
			}
			s.opts.log.Warn("snapshot: free space unknown", "err", err)
		} else {
			room := free - s.opts.minFree
			if room <= 0 && !after {
				return nil, &LimitError{Err: ErrNoSpace, Free: free, Floor: s.opts.minFree, Dir: s.dir}
			}
			room = max(room, 0)
			if b.limit < 0 || room < b.limit {
				b.limit = room
				b.base = LimitError{Err: ErrNoSpace, Limit: max(room, 1), Free: free, Floor: s.opts.minFree, Dir: s.dir, after: after}
			}
		}
	}
	if b.limit < 0 {
		return func() {}, nil
	}
	s.bud.Store(b)
	return func() { s.bud.Store(nil) }, nil
}

// usageRec is the running size of the store's content (file "usage").
type usageRec struct {
	// Bytes is the size of every blob (as stored) when last written.
	Bytes int64 `json:"bytes"`
	// Kept is what the last GC kept.
	Kept int64 `json:"kept"`
}

func (s *Store) readUsage() (usageRec, bool) {
	var u usageRec
	data, err := os.ReadFile(s.path("usage"))
	if err != nil || json.Unmarshal(data, &u) != nil || u.Bytes < 0 {
		return usageRec{}, false
	}
	return u, true
}

// usageSize is the usage file's fixed size: the record, padded with
// spaces (JSON's trailing white space), fits it.
const usageSize = 64

func (s *Store) writeUsage(u usageRec) {
	// Not durable: after a crash it is recounted (recover drops it). It is
	// rewritten in place, one write of a fixed size, under the lock: a
	// rename of a new file on every call cost ~0.35 ms here (ext4 starts
	// writing a file renamed over another back at once).
	data, _ := json.Marshal(u)
	if len(data) < usageSize {
		data = append(data, bytes.Repeat([]byte{' '}, usageSize-len(data))...)
	}
	err := func() error {
		f, err := os.OpenFile(s.path("usage"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.WriteAt(data, 0); err != nil {
			return err
		}
		return f.Truncate(int64(len(data)))
	}()
	if err != nil {
		os.Remove(s.path("usage")) // unknown: recounted when next needed
		s.opts.log.Warn("snapshot: saving the store's size", "err", err)
	}
}

// flushUsage adds the blobs written since the last flush to the running
// size. Under the lock.
func (s *Store) flushUsage() {
	if s.added.Load() != 0 {
		s.usageNow()
	}
}

// usageNow is flushUsage returning the running size, ok false when it is
// unknown. Under the lock.
func (s *Store) usageNow() (usageRec, bool) {
	n := s.added.Swap(0)
	u, ok := s.readUsage()
	if ok && n != 0 {
		u.Bytes += n
		s.writeUsage(u)
	}
	// Unknown: counted from scratch when next needed.
	return u, ok
}

// countUsage walks the objects (once, when the running size is unknown).
func (s *Store) countUsage() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.path("objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil && !strings.HasPrefix(d.Name(), ".") {
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// maybeGC runs GC when the store passed its size limit (WithAutoGC).
// Under the lock; its errors are logged: the call it follows is journaled.
func (s *Store) maybeGC(ctx context.Context) {
	limit := s.opts.autoGC
	if limit <= 0 {
		return
	}
	u, ok := s.usageNow()
	if !ok {
		n, err := s.countUsage()
		if err != nil {
			s.opts.log.Warn("snapshot: counting the store's size", "err", err)
			return
		}
		u = usageRec{Bytes: n}
		s.writeUsage(u)
	}
	if u.Bytes <= max(limit, u.Kept+limit/10) {
		return
	}
	st, err := s.gc(ctx, GCPolicy{MaxBytes: limit - limit/10})
	if err != nil {
		s.opts.log.Warn("snapshot: automatic gc", "err", err)
		return
	}
	s.opts.log.Info("snapshot: automatic gc", "entries_removed", st.EntriesRemoved, "bytes_freed", st.BytesFreed, "bytes_kept", st.BytesKept)
}
