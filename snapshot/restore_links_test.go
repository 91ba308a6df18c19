package snapshot_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/snapshot/snapshottest"
	"golang.org/x/sys/unix"
)

// print is one path's full identity: any write, chmod, chown, rename or
// replacement changes it (ctime moves on every change of the inode).
type print struct {
	ino, ctime, mtime int64
	mode              uint32
	uid, gid          uint32
	sum               string
	link              string
}

// fingerprints records every path under dir (itself as "."), never
// following a symlink.
func fingerprints(t *testing.T, dir string) map[string]print {
	t.Helper()
	out := map[string]print{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fp := print{ino: int64(st.Ino), ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano(), mode: st.Mode, uid: st.Uid, gid: st.Gid}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fp.sum = fmt.Sprintf("%x", sha256.Sum256(data))
		case unix.S_IFLNK:
			fp.link, _ = os.Readlink(p)
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fp
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requireUntouched fails if any path of before (other than those allowed
// and their ancestors, whose entries legitimately change) differs in after,
// or if after has paths that are neither in before nor allowed.
func requireUntouched(t *testing.T, what string, before, after map[string]print, allowed []string) {
	t.Helper()
	ok := func(p string) bool {
		if p == "." {
			return true // the workspace root: its entries may change
		}
		for _, a := range allowed {
			if p == a || strings.HasPrefix(a, p+"/") || strings.HasPrefix(p, a+"/") {
				return true
			}
		}
		return false
	}
	for p, b := range before {
		if ok(p) {
			continue
		}
		if a, found := after[p]; !found {
			t.Errorf("%s: %s was removed", what, p)
		} else if a != b {
			t.Errorf("%s: %s was changed: %+v, was %+v", what, p, a, b)
		}
	}
	for p := range after {
		if _, found := before[p]; !found && !ok(p) {
			t.Errorf("%s: %s was created", what, p)
		}
	}
}

// requireReal fails unless every component of rel under dir is a real
// directory (the last one of the wanted type), never a symlink.
func requireReal(t *testing.T, dir, rel string, want fs.FileMode) {
	t.Helper()
	parts := strings.Split(rel, "/")
	cur := dir
	for i, c := range parts {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			t.Fatalf("%s: parent %s is a %v, want a directory", rel, cur, fi.Mode().Type())
		}
		if i == len(parts)-1 && fi.Mode().Type() != want {
			t.Fatalf("%s is a %v, want %v", rel, fi.Mode().Type(), want)
		}
	}
}

// TestRestoreNeverWritesThroughLinks: a later call swaps a parent (or the
// path itself) for a symlink or another type; undo --force and rollback
// restore exactly the recorded paths, as real directories and files, and
// leave everything else (symlink targets inside and outside the
// workspace) untouched. Without force, undo is a conflict that changes
// nothing.
func TestRestoreNeverWritesThroughLinks(t *testing.T) {
	type env struct {
		w       snapshottest.W
		outside string
	}
	for _, tc := range []struct {
		name    string
		setup   func(e env) // before the call to revert
		call    func(e env) // the call to revert
		later   func(e env) // a later call: the swap
		restore string      // "undo" (with --force) or "rollback"
		allowed []string    // what the restore may change
		check   map[string]string
	}{
		{
			name: "parent symlinked to .git/hooks after the call",
			setup: func(e env) {
				e.w.Write(".git/hooks/pre-commit.sample", "sample", 0o755)
				e.w.Write("src/pre-commit", "echo original", 0o755)
			},
			call:    func(e env) { e.w.Write("src/pre-commit", "echo v2", 0o755) },
			later:   func(e env) { e.w.Remove("src"); e.w.Symlink(".git/hooks", "src") },
			restore: "undo",
			allowed: []string{"src/pre-commit"},
			check:   map[string]string{"src/pre-commit": "echo original"},
		},
		{
			name:    "parent symlinked outside the workspace",
			setup:   func(e env) { e.w.Write("src/main.go", "package main", 0o644) },
			call:    func(e env) { e.w.Write("src/main.go", "package changed", 0o644) },
			later:   func(e env) { e.w.Remove("src"); e.w.Symlink(e.outside, "src") },
			restore: "undo",
			allowed: []string{"src/main.go"},
			check:   map[string]string{"src/main.go": "package main"},
		},
		{
			name:    "grandparent symlinked outside, where the same path exists",
			setup:   func(e env) { e.w.Write("a/b/c.txt", "inside", 0o644) },
			call:    func(e env) { e.w.Write("a/b/c.txt", "changed", 0o644) },
			later:   func(e env) { e.w.Remove("a"); e.w.Symlink(e.outside, "a") },
			restore: "undo",
			allowed: []string{"a/b/c.txt"},
			check:   map[string]string{"a/b/c.txt": "inside"},
		},
		{
			name: "directory the call removed comes back as a symlink to .git/hooks",
			setup: func(e env) {
				e.w.Write(".git/hooks/keep", "k", 0o644)
				e.w.Write("gen/post-checkout", "#!/bin/sh\necho gen", 0o755)
			},
			call:    func(e env) { e.w.Remove("gen") },
			later:   func(e env) { e.w.Symlink(".git/hooks", "gen") },
			restore: "undo",
			allowed: []string{"gen/post-checkout"},
			check:   map[string]string{"gen/post-checkout": "#!/bin/sh\necho gen"},
		},
		{
			name:    "file replaced by a symlink to a file outside",
			setup:   func(e env) { e.w.Write("f.txt", "original", 0o644) },
			call:    func(e env) { e.w.Write("f.txt", "v2", 0o644) },
			later:   func(e env) { e.w.Remove("f.txt"); e.w.Symlink(filepath.Join(e.outside, "target.txt"), "f.txt") },
			restore: "undo",
			allowed: []string{"f.txt"},
			check:   map[string]string{"f.txt": "original"},
		},
		{
			name:    "directory replaced by a file",
			setup:   func(e env) { e.w.Write("d/x", "original", 0o644) },
			call:    func(e env) { e.w.Write("d/x", "v2", 0o644) },
			later:   func(e env) { e.w.Remove("d"); e.w.Write("d", "a file now", 0o644) },
			restore: "undo",
			allowed: []string{"d/x"},
			check:   map[string]string{"d/x": "original"},
		},
		{
			name:    "file replaced by a directory",
			setup:   func(e env) { e.w.Write("f", "original", 0o644) },
			call:    func(e env) { e.w.Write("f", "v2", 0o644) },
			later:   func(e env) { e.w.Remove("f"); e.w.Write("f/inner", "y", 0o644) },
			restore: "undo",
			allowed: []string{"f/inner"},
			check:   map[string]string{"f": "original"},
		},
		{
			name: "rollback over a parent symlinked to .git/hooks",
			setup: func(e env) {
				e.w.Write(".git/hooks/keep", "k", 0o644)
				e.w.Write("src/pre-commit", "echo original", 0o755)
			},
			call:    func(e env) { e.w.Write("src/pre-commit", "echo v2", 0o755) },
			later:   func(e env) { e.w.Remove("src"); e.w.Symlink(".git/hooks", "src") },
			restore: "rollback",
			allowed: []string{"src/pre-commit"},
			check:   map[string]string{"src/pre-commit": "echo original"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, st := newWS(t)
			e := env{w: w, outside: t.TempDir()}
			// The outside directory holds what a followed link would hit.
			for _, p := range []string{"target.txt", "main.go", "b/c.txt", "pre-commit"} {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(e.outside, p)), 0o755))
				if err := os.WriteFile(filepath.Join(e.outside, p), []byte("OUTSIDE"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.setup(e)
			target := call(t, st, func() { tc.call(e) })
			call(t, st, func() { tc.later(e) })
			wsBefore, outBefore := fingerprints(t, w.Dir), fingerprints(t, e.outside)
			var err error
			if tc.restore == "undo" {
				_, err = st.Undo(ctx, target.ID, false, snapshot.CallInfo{})
				if !errors.Is(err, snapshot.ErrConflict) {
					t.Fatalf("undo without force: %v, want a conflict", err)
				}
				requireUntouched(t, "undo without force", wsBefore, fingerprints(t, w.Dir), nil)
				_, err = st.Undo(ctx, target.ID, true, snapshot.CallInfo{})
			} else {
				_, err = st.Rollback(ctx, target.ID, snapshot.CallInfo{})
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.restore, err)
			}
			requireUntouched(t, "outside the workspace", outBefore, fingerprints(t, e.outside), nil)
			requireUntouched(t, "workspace", wsBefore, fingerprints(t, w.Dir), tc.allowed)
			for p, want := range tc.check {
				requireReal(t, w.Dir, p, 0)
				if got, _ := os.ReadFile(filepath.Join(w.Dir, p)); string(got) != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
		})
	}
}

// TestRestoreKeepsOwners: run by root, an undo gives restored files,
// directories, symlinks and FIFOs their recorded owner (not root's), and
// files their recorded mtime; a record without an owner (written before
// owners were kept) gets the workspace root's owner.
func TestRestoreKeepsOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create files of another user")
	}
	ctx := context.Background()
	w, st := newWS(t)
	const uid, gid = 1000, 1000
	chown := func(rel string) {
		t.Helper()
		if err := os.Lchown(filepath.Join(w.Dir, rel), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(w.Dir, 1001, 1002); err != nil {
		t.Fatal(err)
	}
	w.Write("f.txt", "original", 0o640)
	w.Write("d/inner.txt", "inner", 0o644)
	w.Symlink("f.txt", "link")
	w.Mkfifo("fifo")
	w.Write("legacy.txt", "legacy", 0o644)
	for _, p := range []string{"f.txt", "d", "d/inner.txt", "link", "fifo", "legacy.txt"} {
		chown(p)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(filepath.Join(w.Dir, "f.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	// The call (run as root, like a restore would) rewrites everything.
	e := call(t, st, func() {
		w.Write("f.txt", "changed by root", 0o600)
		w.Remove("d")
		w.Remove("link")
		w.Remove("fifo")
		must(t, os.Chown(filepath.Join(w.Dir, "f.txt"), 0, 0))
		w.Remove("legacy.txt")
	})
	// Make the entry look like one written before owners were kept, for
	// legacy.txt only.
	stripOwner(t, st, e.ID, "legacy.txt")
	u, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][2]uint32{
		"f.txt": {uid, gid}, "d": {uid, gid}, "d/inner.txt": {uid, gid}, "link": {uid, gid}, "fifo": {uid, gid},
		"legacy.txt": {1001, 1002},
	} {
		var s unix.Stat_t
		if err := unix.Lstat(filepath.Join(w.Dir, p), &s); err != nil {
			t.Fatal(err)
		}
		if s.Uid != want[0] || s.Gid != want[1] {
			t.Errorf("%s owned by %d:%d after undo, want %d:%d", p, s.Uid, s.Gid, want[0], want[1])
		}
	}
	fi, err := os.Stat(filepath.Join(w.Dir, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o640 {
		t.Errorf("f.txt mtime %v mode %v, want %v 0640", fi.ModTime(), fi.Mode(), old)
	}
	// A redo (undo of the undo) gives root's file back to root.
	if _, err := st.Undo(ctx, u.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	var s unix.Stat_t
	unix.Lstat(filepath.Join(w.Dir, "f.txt"), &s)
	if s.Uid != 0 {
		t.Errorf("after redo f.txt owned by %d, want 0", s.Uid)
	}
}

// stripOwner removes the owner of path's nodes in journal entry id, as an
// entry written before owners were recorded has none.
func stripOwner(t *testing.T, st *snapshot.Store, id, path string) {
	t.Helper()
	name := filepath.Join(st.Dir(), "journal", id+".json")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range m["changes"].([]any) {
		c := c.(map[string]any)
		if c["path"] != path {
			continue
		}
		for _, k := range []string{"old", "new"} {
			if n, ok := c[k].(map[string]any); ok {
				delete(n, "uid")
				delete(n, "gid")
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("entry %s has no change of %s", id, path)
	}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
