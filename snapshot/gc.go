package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	now := s.opts.now()
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
	ix, err := s.loadIndex()
	if err != nil {
		return st, err
	}
	// Sizes of all blobs on disk.
	sizes := map[string]int64{}
	objects := s.path("objects")
	err = filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil {
			sizes[filepath.Base(filepath.Dir(p))+strings.TrimSuffix(d.Name(), zSuffix)] += fi.Size()
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	base := map[string]bool{}
	for _, e := range ix.entries {
		if e.Hash != "" {
			base[e.Hash] = true
		}
	}
	// Pre-scan manifests of open detached calls (background jobs).
	for _, h := range s.openDetachedRefs() {
		base[h] = true
	}
	refsOf := func(e Entry) ([]string, error) {
		var hs []string
		for _, ch := range e.Changes {
			for _, n := range []*Node{ch.Old, ch.New} {
				if n != nil && n.Hash != "" {
					hs = append(hs, n.Hash)
				}
			}
		}
		if e.Manifest != "" {
			hs = append(hs, e.Manifest)
			data, err := s.readBlob(e.Manifest)
			if err == nil {
				if m, err := decodeIndex(data); err == nil {
					for _, me := range m.entries {
						if me.Hash != "" {
							hs = append(hs, me.Hash)
						}
					}
				}
			} else if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
		}
		return hs, nil
	}
	refs := make([][]string, len(all))
	for i := 0; i < keep; i++ {
		if refs[i], err = refsOf(all[i]); err != nil {
			return st, err
		}
	}
	total := func(k int) int64 {
		seen := map[string]bool{}
		var t int64
		add := func(h string) {
			if !seen[h] {
				seen[h] = true
				t += sizes[h]
			}
		}
		for h := range base {
			add(h)
		}
		for i := 0; i < k; i++ {
			for _, h := range refs[i] {
				add(h)
			}
		}
		return t
	}
	if policy.MaxBytes > 0 {
		for keep > 1 && total(keep) > policy.MaxBytes {
			keep--
		}
	}
	live := map[string]bool{}
	for h := range base {
		live[h] = true
	}
	for i := 0; i < keep; i++ {
		for _, h := range refs[i] {
			live[h] = true
		}
	}
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
				return st, err
			}
		}
		st.BlobsRemoved++
		st.BytesFreed += size
	}
	// Blobs written meanwhile (none: the lock is held) are in added.
	s.writeUsage(usageRec{Bytes: st.BytesKept, Kept: st.BytesKept})
	return st, nil
}
