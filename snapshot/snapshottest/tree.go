// Package snapshottest is the conformance suite for snapshot stores: table
// cases for every kind of change, undo/redo/rollback round trips, editor
// undo, conflicts, and a randomized property test comparing restored trees
// byte for byte. Run it with Run from a test of the store under test.
package snapshottest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// State is what the suite compares for one path: type, mode bits, content,
// link target. Not mtimes: restores, like git, write files anew.
type State struct {
	Type string
	Mode fs.FileMode
	Data string
	Link string
}

// Tree maps workspace-relative slash paths to their state.
type Tree map[string]State

// Capture reads dir without following symlinks.
func Capture(t testing.TB, dir string) Tree {
	t.Helper()
	tr := Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := State{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch m := fi.Mode(); {
		case m.IsRegular():
			st.Type = "file"
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.Data = string(data)
		case m.IsDir():
			st.Type = "dir"
		case m&fs.ModeSymlink != 0:
			st.Type = "symlink"
			st.Link, err = os.Readlink(p)
			if err != nil {
				return err
			}
		case m&fs.ModeNamedPipe != 0:
			st.Type = "fifo"
		default:
			st.Type = "other"
		}
		tr[rel] = st
		return nil
	})
	if err != nil {
		t.Fatalf("capture %s: %v", dir, err)
	}
	return tr
}

// Diff lists the differences between want and got, empty when equal.
func Diff(want, got Tree) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%q: missing (want %s)", p, w.Type))
		case g.Type != w.Type:
			out = append(out, fmt.Sprintf("%q: type %s, want %s", p, g.Type, w.Type))
		case g.Mode != w.Mode:
			out = append(out, fmt.Sprintf("%q: mode %v, want %v", p, g.Mode, w.Mode))
		case g.Data != w.Data:
			out = append(out, fmt.Sprintf("%q: content differs (%d bytes, want %d)", p, len(g.Data), len(w.Data)))
		case g.Link != w.Link:
			out = append(out, fmt.Sprintf("%q: link %q, want %q", p, g.Link, w.Link))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("%q: unexpected %s", p, g.Type))
		}
	}
	sort.Strings(out)
	return out
}

// RequireEqual fails the test if the trees differ.
func RequireEqual(t testing.TB, what string, want, got Tree) {
	t.Helper()
	if d := Diff(want, got); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
		}
		t.Fatalf("%s: tree differs:\n  %s", what, strings.Join(d, "\n  "))
	}
}

// W changes a workspace, failing the test on error.
type W struct {
	T   testing.TB
	Dir string
}

func (w W) p(rel string) string { return filepath.Join(w.Dir, filepath.FromSlash(rel)) }

func (w W) check(err error) {
	w.T.Helper()
	if err != nil {
		w.T.Fatal(err)
	}
}

// Write writes a file (creating parents) and sets its mode.
func (w W) Write(rel, data string, mode fs.FileMode) {
	w.T.Helper()
	w.check(os.MkdirAll(filepath.Dir(w.p(rel)), 0o755))
	w.check(os.WriteFile(w.p(rel), []byte(data), mode))
	w.check(os.Chmod(w.p(rel), mode))
}

// Mkdir makes a directory (and parents) with mode.
func (w W) Mkdir(rel string, mode fs.FileMode) {
	w.T.Helper()
	w.check(os.MkdirAll(w.p(rel), 0o755))
	w.check(os.Chmod(w.p(rel), mode))
}

// Symlink makes rel a symlink to target.
func (w W) Symlink(target, rel string) {
	w.T.Helper()
	w.check(os.MkdirAll(filepath.Dir(w.p(rel)), 0o755))
	w.check(os.Symlink(target, w.p(rel)))
}

// Remove removes rel and everything under it.
func (w W) Remove(rel string) {
	w.T.Helper()
	w.check(os.RemoveAll(w.p(rel)))
}

// Chmod changes rel's mode.
func (w W) Chmod(rel string, mode fs.FileMode) {
	w.T.Helper()
	w.check(os.Chmod(w.p(rel), mode))
}

// Rename moves a path.
func (w W) Rename(from, to string) {
	w.T.Helper()
	w.check(os.Rename(w.p(from), w.p(to)))
}

// Mkfifo makes a named pipe.
func (w W) Mkfifo(rel string) {
	w.T.Helper()
	w.check(unix.Mkfifo(w.p(rel), 0o644))
}
