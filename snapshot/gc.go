package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// GC drops journal entries beyond policy and deletes every blob no kept
// entry, kept checkpoint manifest or the current manifest references. The
// newest entry is always kept. Entries are removed before blobs, so a crash
// in between leaves only unreferenced blobs for the next GC.
func (s *Store) GC(ctx context.Context, policy GCPolicy) (GCStats, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return GCStats{}, err
	}
	defer unlock()
	return s.gc(ctx, policy)
}

// gc is GC under the lock. It leaves the running size exact.
func (s *Store) gc(ctx context.Context, policy GCPolicy) (GCStats, error) {
	s.flushUsage()
	var st GCStats
	all, err := s.List(ctx, 0) // newest first
	if err != nil {
		return st, err
	}
	keep := keepByPolicy(all, policy, s.opts.now())
	ix, err := s.loadIndex()
	if err != nil {
		return st, err
	}
	sizes, err := s.blobSizes()
	if err != nil {
		return st, err
	}
	base := s.baseRefs(ix)
	refs := make([][]string, len(all))
	for i := 0; i < keep; i++ {
		if refs[i], err = s.entryRefs(all[i]); err != nil {
			return st, err
		}
	}
	if policy.MaxBytes > 0 {
		for keep > 1 && liveBytes(liveSet(base, refs[:keep]), sizes) > policy.MaxBytes {
			keep--
		}
	}
	live := liveSet(base, refs[:keep])
	for i := keep; i < len(all); i++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := s.removeEntry(all[i].ID); err != nil {
			return st, err
		}
		st.EntriesRemoved++
	}
	st.EntriesKept = keep
	if err := syncDir(s.path("journal")); err != nil {
		return st, err
	}
	if err := s.removeBlobs(sizes, live, &st); err != nil {
		return st, err
	}
	// Blobs written meanwhile (none: the lock is held) are in added.
	s.writeUsage(usageRec{Bytes: st.BytesKept, Kept: st.BytesKept})
	return st, nil
}

// keepByPolicy is how many of the entries (newest first) the count and
// age limits of policy keep; at least one when there is any.
func keepByPolicy(all []Entry, policy GCPolicy, now time.Time) int {
	keep := len(all)
	if policy.KeepCalls > 0 && keep > policy.KeepCalls {
		keep = policy.KeepCalls
	}
	if policy.MaxAge > 0 {
		for i := 1; i < keep; i++ {
			if now.Sub(all[i].Time) > policy.MaxAge {
				keep = i
				break
			}
		}
	}
	if keep < 1 && len(all) > 0 {
		keep = 1
	}
	return keep
}

// blobSizes is the size on disk of every blob, by hash.
func (s *Store) blobSizes() (map[string]int64, error) {
	sizes := map[string]int64{}
	err := filepath.WalkDir(s.path("objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil {
			sizes[filepath.Base(filepath.Dir(p))+strings.TrimSuffix(d.Name(), zSuffix)] += fi.Size()
		}
		return nil
	})
	return sizes, err
}

// baseRefs are the blobs kept whatever the policy: those of the current
// manifest ix and of the manifests of open detached calls (background
// jobs).
func (s *Store) baseRefs(ix *index) map[string]bool {
	base := map[string]bool{}
	for _, e := range ix.entries {
		if e.Hash != "" {
			base[e.Hash] = true
		}
	}
	for _, h := range s.openDetachedRefs() {
		base[h] = true
	}
	return base
}

// entryRefs are the blobs entry e references: the old and new content of
// its changes, its manifest and the blobs the manifest lists.
func (s *Store) entryRefs(e Entry) ([]string, error) {
	var hs []string
	for _, ch := range e.Changes {
		for _, n := range []*Node{ch.Old, ch.New} {
			if n != nil && n.Hash != "" {
				hs = append(hs, n.Hash)
			}
		}
	}
	if e.Manifest == "" {
		return hs, nil
	}
	hs = append(hs, e.Manifest)
	data, err := s.readBlob(e.Manifest)
	if errors.Is(err, ErrNotFound) {
		return hs, nil
	}
	if err != nil {
		return nil, err
	}
	if m, err := decodeIndex(data); err == nil {
		for _, me := range m.entries {
			if me.Hash != "" {
				hs = append(hs, me.Hash)
			}
		}
	}
	return hs, nil
}

// liveSet is base and every blob of refs.
func liveSet(base map[string]bool, refs [][]string) map[string]bool {
	live := make(map[string]bool, len(base))
	for h := range base {
		live[h] = true
	}
	for _, hs := range refs {
		for _, h := range hs {
			live[h] = true
		}
	}
	return live
}

// liveBytes is the size on disk of the blobs in live.
func liveBytes(live map[string]bool, sizes map[string]int64) int64 {
	var t int64
	for h := range live {
		t += sizes[h]
	}
	return t
}

// removeBlobs deletes every blob of sizes not in live, counting in st.
func (s *Store) removeBlobs(sizes map[string]int64, live map[string]bool, st *GCStats) error {
	for h, size := range sizes {
		if live[h] {
			st.BytesKept += size
			continue
		}
		if !validHash(h) {
			continue
		}
		for _, name := range []string{s.blobPath(h), s.blobPath(h) + zSuffix} {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		st.BlobsRemoved++
		st.BytesFreed += size
	}
	return nil
}
