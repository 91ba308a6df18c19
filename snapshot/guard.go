package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Protected paths.
//
// Some workspace paths make a program on the host run something the next
// time a person opens the project (.git/config, .vscode/, .envrc, …).
// A store opened WithProtection checks every call's changeset before it
// is journaled: each change to a protected path (created, modified,
// deleted, type or mode changed, at any depth) is reverted at once, under
// the store lock, unless the call's Keep function (Call.SetKeep) says a
// person approved keeping it. Reverted changes are not in the entry's
// Changes; they are listed in Reverted. A change to a directory that was
// created or replaced takes everything the call changed beneath it along.
//
// The window in which such a change exists on disk is the rest of the
// command's run plus the post-scan: it ends before the call returns. A
// background job's change is reverted as it happens (jobguard.go) and
// listed in the job's entry's Reverted.
// Recovery after a crash applies the same rule, without asking.
//
// With concurrent calls (see the package doc) a running command's change
// to a path another entry then takes over is in no changeset of the
// command's: before a file-scoped call, an undo or a rollback takes a
// protected path that differs from the manifest while a whole-workspace
// command or a background job is open, that change is reverted first
// (guardTakeover), so no entry starts from a state nobody judged. A
// directory a call created or replaced is not removed when it holds
// paths other entries journaled; the call's own changes beneath it are
// judged one by one. The Keep function sees each change's new content
// (Protected.New): an approval given for what a tool wrote is checked
// against it (tools' keepFor).

// ProtectFunc reports whether a workspace-relative path is protected and
// why (a sentence for people). It must be safe for concurrent use.
type ProtectFunc func(rel string) (reason string, protected bool)

// ContentFunc returns the judge of a path protected by what a change does
// to its content (package.json's hook-relevant keys, a rebase todo list's
// exec lines), or nil for any other path. The judge gets the content
// before and after (nil: absent) and reports whether the change is
// protected, and why.
type ContentFunc func(rel string) func(old, new []byte) (reason string, protected bool)

// WithContentProtection makes the store judge changes to content-judged
// paths ([ContentFunc]) like changes to protected paths: reverted unless
// kept. newFn makes the judge for one call.
func WithContentProtection(newFn func() ContentFunc) Option {
	return func(o *options) { o.content = newFn }
}

// Protected is one change to a protected path.
type Protected struct {
	Change
	Reason string
}

// KeepFunc is asked, for a call, which changes to protected paths a person
// approved keeping. It returns the paths to keep; everything else is
// reverted. ctx carries the caller's deadline.
type KeepFunc func(ctx context.Context, changes []Protected) (keep []string)

// WithProtection makes the store revert changes to protected paths before
// journaling them (see [Protected]). newFn makes the matcher for one call
// (it may cache what it looks up on disk for that call).
func WithProtection(newFn func() ProtectFunc) Option { return func(o *options) { o.protect = newFn } }

// SetKeep sets the function asked which protected changes to keep; without
// one every protected change is reverted.
func (c *Call) SetKeep(fn KeepFunc) { c.keep = fn }

// SetKeep sets the function asked which protected changes to keep; without
// one every protected change is reverted.
func (d *Detached) SetKeep(fn KeepFunc) {
	d.mu.Lock()
	d.keep = fn
	d.mu.Unlock()
}

// guard splits changes into those to journal and those to revert, reverts
// the latter and updates post (the manifest after the call) for them. It
// returns the changes to journal, the reverted ones, and an error when a
// revert failed (the changes it could not revert stay in the journal).
//
// The protection depends on what the workspace holds (the host-run
// closure: a hook directory, an .envrc naming a file), and reverting a
// change can bring a trigger back, whose restored content can name more
// (.git/config's hooksPath, then the hook's script): so rounds judge the
// rest against the restored state until one reverts nothing. Each round
// that goes on reverted at least one change, so there are at most as
// many rounds as changes.
func (s *Store) guard(ctx context.Context, id string, changes []Change, keep KeepFunc, post *index) ([]Change, []Protected, error) {
	journal, reverted, err := s.guardRound(ctx, id, changes, keep, post)
	for round, more := 2, reverted; err == nil && len(more) > 0 && len(journal) > 0; round++ {
		journal, more, err = s.guardRound(ctx, fmt.Sprintf("%s-%d", id, round), journal, keep, post)
		reverted = append(reverted, more...)
	}
	sort.Slice(reverted, func(i, j int) bool { return reverted[i].Path < reverted[j].Path })
	return journal, reverted, err
}

// guardRound is one round of guard.
func (s *Store) guardRound(ctx context.Context, id string, changes []Change, keep KeepFunc, post *index) ([]Change, []Protected, error) {
	if s.opts.protect == nil || len(changes) == 0 {
		return changes, nil, nil
	}
	var hits []Protected
	protect, content := s.opts.protect(), s.contentFunc()
	rootfd := -1
	defer func() {
		if rootfd >= 0 {
			closeFD(rootfd)
		}
	}()
	for i, ch := range changes {
		if emptyDirAdded(changes, i) {
			// An empty directory runs nothing (the sandbox creates empty
			// .git/hooks and .git/info to mount them read-only); what is
			// later put in it is judged on its own.
			continue
		}
		if why, ok := protect(ch.Path); ok {
			hits = append(hits, Protected{Change: ch, Reason: why})
			continue
		}
		if content == nil {
			continue
		}
		if judge := content(ch.Path); judge != nil {
			if rootfd < 0 {
				if fd, err := s.openRoot(); err == nil {
					rootfd = fd
				}
			}
			if why, ok := s.judgeContent(rootfd, ch, judge); ok {
				hits = append(hits, Protected{Change: ch, Reason: why})
			}
		}
	}
	if len(hits) == 0 {
		return changes, nil, nil
	}
	kept := map[string]bool{}
	if keep != nil {
		for _, p := range keep(ctx, hits) {
			kept[p] = true
		}
	}
	revert := map[string]string{}
	var roots []string // created or replaced: everything beneath goes too
	for _, h := range hits {
		if kept[h.Path] {
			continue
		}
		if (h.Old == nil || h.Op == OpTypeChanged) && foreignBeneath(h.Path, changes, post) {
			// A directory the call created or replaced holds what
			// other entries journaled (a Write while the command ran):
			// removing it would revert their changes too. It stays;
			// the call's own changes beneath it are judged one by one.
			continue
		}
		revert[h.Path] = h.Reason
		if h.Old == nil || h.Op == OpTypeChanged {
			roots = append(roots, h.Path+"/")
		}
	}
	if len(revert) == 0 {
		return changes, nil, nil
	}
	for _, ch := range changes {
		for _, r := range roots {
			if strings.HasPrefix(ch.Path, r) {
				if _, ok := revert[ch.Path]; !ok {
					revert[ch.Path] = "beneath " + strings.TrimSuffix(r, "/") + ", which was reverted"
				}
			}
		}
	}
	var journal []Change
	var reverted []Protected
	var items []planItem
	for _, ch := range changes {
		why, ok := revert[ch.Path]
		if !ok {
			journal = append(journal, ch)
			continue
		}
		reverted = append(reverted, Protected{Change: ch, Reason: why})
		items = append(items, planItem{Path: ch.Path, Target: ch.Old})
	}
	// Deepest first for removals is the restore's business; keep a stable
	// order for the journal.
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	written, err := s.apply(ctx, id+"-guard", items, true)
	rootfd, ferr := s.openRoot()
	if ferr == nil {
		defer closeFD(rootfd)
	}
	var failed []Change
	if post != nil && len(reverted) > 0 {
		// A fresh map: a scan's result is never written in place (the
		// change capture copies it in the background, see capture.spare).
		post.entries = maps.Clone(post.entries)
	}
	for _, r := range reverted {
		after, known := written[r.Path]
		if !known && ferr == nil {
			var serr error
			if after, serr = s.statPath(rootfd, r.Path, nil); serr != nil {
				after = nil
			}
		}
		if !sameContent(nodeOf(after), r.Old) {
			failed = append(failed, r.Change)
		}
		if post != nil {
			if after == nil {
				delete(post.entries, r.Path)
			} else {
				post.entries[r.Path] = after
			}
		}
	}
	if len(failed) > 0 {
		// What could not be reverted is journaled, so that people see it
		// and can undo it.
		journal = append(journal, failed...)
		sort.Slice(journal, func(i, j int) bool { return journal[i].Path < journal[j].Path })
		var ok []Protected
		bad := map[string]bool{}
		for _, f := range failed {
			bad[f.Path] = true
		}
		for _, r := range reverted {
			if !bad[r.Path] {
				ok = append(ok, r)
			}
		}
		reverted = ok
		if err == nil {
			err = errRevert(failed)
		}
	}
	return journal, reverted, err
}

func closeFD(fd int) { _ = unix.Close(fd) }

// maxJudgedBytes bounds the content a judge reads; a larger file fails
// closed.
const maxJudgedBytes = 8 << 20

// judgeContent runs a content judge on a change: the old content from
// the blob store, the new one from the blob store or, when it was not
// stored, from the workspace (beneath rootfd, no symlinks). A side that
// is not a regular file, or that cannot be read, fails closed.
func (s *Store) judgeContent(rootfd int, ch Change, judge func(old, new []byte) (string, bool)) (string, bool) {
	read := func(n *Node, disk bool) ([]byte, bool) {
		switch {
		case n == nil:
			return nil, true
		case n.Type != TypeFile || n.Size > maxJudgedBytes:
			return nil, false
		}
		if data, err := s.readBlob(n.Hash); err == nil {
			return data, true
		}
		if !disk || rootfd < 0 {
			return nil, false
		}
		data, err := readBeneath(rootfd, ch.Path)
		return data, err == nil && sha256Hex(data) == n.Hash
	}
	newData, ok := read(ch.New, true)
	if !ok {
		return fmt.Sprintf("%s is judged by its content, and its new content could not be read as a regular file", ch.Path), true
	}
	oldData, ok := read(ch.Old, false)
	if !ok {
		oldData = nil // unknown before: judged as if it was absent
	}
	return judge(oldData, newData)
}

// readBeneath reads the regular file rel beneath rootfd without
// following a symlink anywhere on the way.
func readBeneath(rootfd int, rel string) ([]byte, error) {
	fd, err := unix.Openat2(rootfd, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJudgedBytes+1))
	if err == nil && len(data) > maxJudgedBytes {
		err = fmt.Errorf("%s is larger than %d bytes", rel, maxJudgedBytes)
	}
	return data, err
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// foreignBeneath reports whether post (the manifest after the call; nil:
// unknown) holds a path beneath dir that is not among the call's changes.
func foreignBeneath(dir string, changes []Change, post *index) bool {
	if post == nil {
		return false
	}
	own := make(map[string]bool, len(changes))
	for _, ch := range changes {
		own[ch.Path] = true
	}
	for p := range post.entries {
		if strings.HasPrefix(p, dir+"/") && !own[p] {
			return true
		}
	}
	return false
}

// errRevert describes changes to protected paths that could not be reverted.
func errRevert(failed []Change) error {
	paths := make([]string, 0, len(failed))
	for _, f := range failed {
		paths = append(paths, quotePath(f.Path))
	}
	return fmt.Errorf("snapshot: changes to protected paths could not be reverted: %s", strings.Join(paths, ", "))
}

// emptyDirAdded reports whether changes[i] adds a directory that holds
// nothing the call changed (changes are sorted by path).
func emptyDirAdded(changes []Change, i int) bool {
	ch := changes[i]
	if ch.Op != OpAdded || ch.New == nil || ch.New.Type != TypeDir {
		return false
	}
	// Children sort after ch but not always right after it ("a/b-c"
	// comes before "a/b/x"): look through every path ch is a prefix of.
	for j := i + 1; j < len(changes) && strings.HasPrefix(changes[j].Path, ch.Path); j++ {
		if strings.HasPrefix(changes[j].Path, ch.Path+"/") {
			return false
		}
	}
	return true
}

// guardDrift judges what changed on disk since the last manifest (old)
// when a background job is running: such drift may be the job's, made
// outside any call, and a protected change among it would otherwise be
// taken into the new pre-scan (pre) unjudged — and a later call that
// writes the same bytes again would then show no change at all. Protected
// drift is reverted (nobody is asked: no call made it) and pre updated.
// With no job running, drift is the user's own editing and is left alone.
// It returns what it reverted. While a job of this process runs, the live
// guard (jobguard.go) does this as the changes happen.
func (s *Store) guardDrift(ctx context.Context, id string, old, pre *index) []Protected {
	if s.opts.protect == nil || old == nil || pre == nil || old == pre || !s.anyDetachedLive() {
		return nil
	}
	drift := diffIndex(old, pre)
	if len(drift) == 0 {
		return nil
	}
	_, reverted, err := s.guard(ctx, id+"-drift", drift, nil, pre)
	if len(reverted) > 0 {
		paths := make([]string, 0, len(reverted))
		for _, r := range reverted {
			paths = append(paths, r.Path)
		}
		s.opts.log.Warn("snapshot: reverted changes to protected paths made outside any call while a background job ran", "paths", paths)
	}
	if err != nil {
		s.opts.log.Error("snapshot: could not revert changes to protected paths made while a background job ran", "err", err)
	}
	return reverted
}

// anyDetachedLive reports whether a detached call (a background job) of
// this store is running.
func (s *Store) anyDetachedLive() bool {
	ids, _ := s.ids("pending")
	for _, id := range ids {
		if rec, err := s.readPending(id); err == nil && rec.Detached && s.detachedLive(id) {
			return true
		}
	}
	return false
}

// guardTakeover reverts changes to the protected paths among rels that
// a running command made and that another call (a file-scoped call, an
// undo, a rollback) is about to take over. Such a change is in no
// command's changeset any more once that call's entry holds the path
// (see Detached on overlap), so the command's guard would never judge it,
// while the taking call's entry would hold it as the state an undo
// returns to: an approved Write of .envrc, undone, would bring back what
// the command planted before it. So, while a whole-workspace command or a
// background job is open, a protected path whose state on disk differs
// from the manifest (the state the last scan or entry left) is set back
// to the manifest's state first, as the command's guard would have done
// (nobody is asked: the command's own approval is not known here). It
// reports whether it changed anything. Under the store lock.
func (s *Store) guardTakeover(ctx context.Context, id string, rels []string) bool {
	if s.opts.protect == nil || len(rels) == 0 || !s.hasIndex() {
		return false
	}
	protect := s.opts.protect()
	content := s.contentFunc()
	var cand []string
	for _, p := range rels {
		if guarded(protect, content, p) && !s.excludedPath(p, map[string]bool{}) {
			cand = append(cand, p)
		}
	}
	if len(cand) == 0 || !s.anyDetachedLive() {
		return false
	}
	ix, err := s.loadIndex()
	if err != nil {
		return false
	}
	rootfd, err := s.openRoot()
	if err != nil {
		return false
	}
	defer closeFD(rootfd)
	var drift []Change
	for _, p := range cand {
		cur, err := s.statPath(rootfd, p, ix.entries[p])
		if err != nil {
			continue
		}
		if ch, ok := classify(p, nodeOf(ix.entries[p]), nodeOf(cur)); ok {
			drift = append(drift, ch)
		}
	}
	if len(drift) == 0 {
		return false
	}
	sort.Slice(drift, func(i, j int) bool { return drift[i].Path < drift[j].Path })
	_, reverted, err := s.guard(ctx, id+"-takeover", drift, nil, nil)
	if len(reverted) > 0 {
		paths := make([]string, 0, len(reverted))
		for _, r := range reverted {
			paths = append(paths, r.Path)
		}
		s.opts.log.Warn("snapshot: reverted changes a running command made to protected paths before another call took them over", "paths", paths)
	}
	if err != nil {
		s.opts.log.Error("snapshot: could not revert changes a running command made to protected paths", "err", err)
	}
	return len(reverted) > 0 || err != nil
}

// takeoverStale is the check after the pre-image of a call that took
// over paths (guardTakeover): the protected ones among states (path →
// its state as the call recorded it) that still differ from the manifest
// while a command is open, i.e. that the command changed again between
// the revert and the pre-image. Such a call fails rather than start from
// a state nobody judged. Under the store lock.
func (s *Store) takeoverStale(states map[string]*Node) error {
	if s.opts.protect == nil || len(states) == 0 || !s.hasIndex() {
		return nil
	}
	protect := s.opts.protect()
	content := s.contentFunc()
	var cand []string
	for p := range states {
		if guarded(protect, content, p) && !s.excludedPath(p, map[string]bool{}) {
			cand = append(cand, p)
		}
	}
	if len(cand) == 0 || !s.anyDetachedLive() {
		return nil
	}
	ix, err := s.loadIndex()
	if err != nil {
		return err
	}
	var stale []string
	for _, p := range cand {
		if !sameContent(nodeOf(ix.entries[p]), states[p]) {
			stale = append(stale, quotePath(p))
		}
	}
	if len(stale) == 0 {
		return nil
	}
	sort.Strings(stale)
	return fmt.Errorf("snapshot: a running command keeps changing the protected %s; try again once it has ended", strings.Join(stale, ", "))
}

// guarded reports whether a change to rel is judged by the guard: a
// protected path, or one judged by its content (WithContentProtection).
func guarded(protect ProtectFunc, content ContentFunc, rel string) bool {
	if _, ok := protect(rel); ok {
		return true
	}
	return content != nil && content(rel) != nil
}

// contentFunc is the store's content judge for one decision, or nil.
func (s *Store) contentFunc() ContentFunc {
	if s.opts.content == nil {
		return nil
	}
	return s.opts.content()
}

// planStates is the state on disk each path of a plan was found in.
func planStates(plan []diskChange) map[string]*Node {
	out := make(map[string]*Node, len(plan))
	for _, d := range plan {
		out[string(d.Path)] = fromDiskNode(d.Old)
	}
	return out
}

// planPaths lists the paths of a plan.
func planPaths(plan []diskChange) []string {
	out := make([]string, 0, len(plan))
	for _, d := range plan {
		out = append(out, string(d.Path))
	}
	return out
}
