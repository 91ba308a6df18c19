//go:build integration

package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// TestUndoForceNeverWritesThroughLinks drives the real binary through the
// red-team sequence: a call changes src/pre-commit, a later call replaces
// src with a symlink to .git/hooks, and `agentbox undo --force` of the
// first call must restore src/pre-commit as a real file in a real src
// directory, owned by the workspace owner (not root), without creating or
// changing anything in .git/hooks.
func TestUndoForceNeverWritesThroughLinks(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		o, e, code := agentboxIn(t, ws, state, nil, args...)
		return o + e, code
	}
	write := func(rel, data string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(ws, rel)
		for d := filepath.Dir(p); d != ws; d = filepath.Dir(d) {
			must(t, os.MkdirAll(d, 0o755))
			must(t, os.Chown(d, wsUID, wsGID))
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, wsUID, wsGID); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/hooks/pre-commit.sample", "#!/bin/sh\n", 0o755)
	write("src/pre-commit", "#!/bin/sh\necho original\n", 0o755)
	write("src/keep.txt", "keep\n", 0o644)
	hooks := filepath.Join(ws, ".git", "hooks")
	hooksBefore := listing(t, hooks)

	if out, code := run("exec", "--", "printf '#!/bin/sh\\necho v2\\n' > src/pre-commit"); code != 0 {
		t.Fatalf("exec 1: code %d: %s", code, out)
	}
	if out, code := run("exec", "--", "rm -rf src && ln -s .git/hooks src"); code != 0 {
		t.Fatalf("exec 2: code %d: %s", code, out)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "src")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("src is not a symlink after the second call: %v %v", fi, err)
	}
	out, code := run("undo", "1")
	if code == 0 || !strings.Contains(out, "src") {
		t.Fatalf("undo without --force over a symlinked parent: code %d: %s", code, out)
	}
	if got := listing(t, hooks); got != hooksBefore {
		t.Fatalf("undo without --force changed .git/hooks:\n%s\nwas\n%s", got, hooksBefore)
	}
	if out, code := run("undo", "--force", "1"); code != 0 {
		t.Fatalf("undo --force: code %d: %s", code, out)
	}
	if got := listing(t, hooks); got != hooksBefore {
		t.Fatalf("undo --force wrote through the symlink into .git/hooks:\n%s\nwas\n%s", got, hooksBefore)
	}
	for rel, want := range map[string]os.FileMode{"src": os.ModeDir | 0o755, "src/pre-commit": 0o755} {
		fi, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeType|os.ModePerm) != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode(), want)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != wsUID || st.Gid != wsGID {
			t.Errorf("%s owned by %d:%d after undo by root, want the workspace owner %d:%d", rel, st.Uid, st.Gid, wsUID, wsGID)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "src/pre-commit")); string(got) != "#!/bin/sh\necho original\n" {
		t.Errorf("src/pre-commit = %q", got)
	}
	// The sandbox (the workspace owner's uid) can write what was restored.
	if out, code := run("exec", "--", "echo v3 >> src/pre-commit && touch src/new.txt"); code != 0 {
		t.Fatalf("the sandbox cannot write restored files: code %d: %s", code, out)
	}
}

// listing describes every entry under dir: name, mode, size, change time.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		lines = append(lines, fmt.Sprintf("%s %v size=%d ctime=%d ino=%d", p, fi.Mode(), fi.Size(), st.Ctim.Nano(), st.Ino))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestExecSnapshotCap: with snapshot.max_call_bytes set, a command that
// wrote more than the cap is journaled (its content recorded but not
// kept), and the next command, which would run without its pre-image, is
// refused before it runs with a message naming the setting.
func TestExecSnapshotCap(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		o, e, code := agentboxIn(t, ws, state, []string{"AGENTBOX_SNAPSHOT_MAX_CALL_BYTES=1000000"}, args...)
		return o + e, code
	}
	if out, code := run("exec", "--", "echo small > a.txt"); code != 0 {
		t.Fatalf("exec: code %d: %s", code, out)
	}
	if out, code := run("exec", "--", "head -c 3000000 /dev/urandom > big.bin"); code != 0 {
		t.Fatalf("a command is never refused after it ran: code %d: %s", code, out)
	}
	out, code := run("exec", "--", "echo after > b.txt")
	if code == 0 || !strings.Contains(out, "max_call_bytes") || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("exec after a call over the cap: code %d: %s", code, out)
	}
	t.Logf("refused: %s", out)
	if _, err := os.Lstat(filepath.Join(ws, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused command ran: b.txt %v", err)
	}
	// A checkpoint (not capped) records the tree; then calls run again.
	if out, code := run("checkpoint", "-m", "baseline"); code != 0 {
		t.Fatalf("checkpoint: code %d: %s", code, out)
	}
	if out, code := run("exec", "--", "echo after > b.txt"); code != 0 {
		t.Fatalf("exec after a checkpoint: code %d: %s", code, out)
	}
}
