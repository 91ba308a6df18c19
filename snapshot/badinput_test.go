package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/snapshot/snapshottest"
)

func newWS(t *testing.T) (snapshottest.W, *snapshot.Store) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.Open(context.Background(), filepath.Join(base, "state"), ws)
	if err != nil {
		t.Fatal(err)
	}
	return snapshottest.W{T: t, Dir: ws}, st
}

func call(t *testing.T, st *snapshot.Store, fn func()) snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	fn()
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDeepTree(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	const depth = 240 // 240 × 21 bytes of path: beyond PATH_MAX
	rel := strings.Repeat("deep-directory-name/", depth) + "leaf.txt"
	e := call(t, st, func() {
		// MkdirAll needs the whole path at once; build it step by step.
		dir := w.Dir
		for i := 0; i < depth; i++ {
			if err := os.Mkdir(filepath.Join(dir, "deep-directory-name"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chdir(filepath.Join(dir, "deep-directory-name")); err != nil {
				t.Fatal(err)
			}
			dir = "."
		}
		if err := os.WriteFile("leaf.txt", []byte("bottom"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chdir("/")
	})
	if len(e.Changes) != depth+1 || e.Changes[len(e.Changes)-1].Path != rel {
		t.Fatalf("%d changes, want %d", len(e.Changes), depth+1)
	}
	if _, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(w.Dir, "deep-directory-name")); !os.IsNotExist(err) {
		t.Fatalf("deep tree still there after undo: %v", err)
	}
	_, err := st.Rollback(ctx, e.ID, snapshot.CallInfo{}) // nothing to do: before e there was nothing
	if err != nil {
		t.Fatal(err)
	}
	list, _ := st.List(ctx, 2)
	if u, err := st.Undo(ctx, list[1].ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("redo: %v", err)
	} else if len(u.Changes) != depth+1 {
		t.Fatalf("redo restored %d paths", len(u.Changes))
	}
	data, err := os.ReadFile(filepath.Join(w.Dir, strings.Repeat("deep-directory-name/", 100)) + "/" + strings.Repeat("deep-directory-name/", depth-100) + "leaf.txt")
	if err == nil && string(data) != "bottom" || err != nil && !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("leaf after redo: %q %v", data, err)
	}
}

func TestVanishingFiles(t *testing.T) {
	w, st := newWS(t)
	for i := 0; i < 200; i++ {
		w.Write(fmt.Sprintf("d%d/f%d", i%10, i), "x", 0o644)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			d := filepath.Join(w.Dir, fmt.Sprintf("d%d", i%10))
			os.RemoveAll(d)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Error(err)
				return
			}
			for j := 0; j < 20; j++ {
				if err := os.WriteFile(filepath.Join(d, fmt.Sprint("n", j)), []byte("y"), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for i := 0; i < 30; i++ {
		call(t, st, func() {})
	}
	stop.Store(true)
	wg.Wait()
	call(t, st, func() {})
	if e := call(t, st, func() {}); len(e.Changes) != 0 {
		t.Fatalf("a quiet tree still shows %d changes", len(e.Changes))
	}
}

func TestWorkspaceIsSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	must(t, os.Mkdir(real, 0o755))
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := snapshot.Open(ctx, filepath.Join(base, "state"), link)
	if err != nil {
		t.Fatal(err)
	}
	if st.Workspace() != real {
		t.Fatalf("Workspace() = %s, want %s", st.Workspace(), real)
	}
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(real, "f.txt")))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(link, "f.txt"), []byte("via link"), 0o644))
	e, err := c.Finish(ctx)
	if err != nil || len(e.Changes) != 1 {
		t.Fatalf("finish: %v %v", e.Changes, err)
	}
	if _, err := st.Undo(ctx, e.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(real, "f.txt")); !os.IsNotExist(err) {
		t.Fatal("undo did not remove the file")
	}
	if _, err := st.Begin(ctx, snapshot.CallInfo{}, snapshot.File("/etc/passwd")); !errors.Is(err, snapshot.ErrOutside) {
		t.Fatalf("scope outside the workspace: %v", err)
	}
	if _, err := st.Begin(ctx, snapshot.CallInfo{}, snapshot.File("../x")); !errors.Is(err, snapshot.ErrOutside) {
		t.Fatalf("scope ../x: %v", err)
	}
	if _, err := snapshot.Open(ctx, filepath.Join(real, "state"), real); err == nil {
		t.Fatal("a state dir inside the workspace was accepted")
	}
}

// Restores never write through a symlink that leads out of the workspace.
func TestRestoreDoesNotFollowOutwardSymlink(t *testing.T) {
	w, st := newWS(t)
	ctx := context.Background()
	outside := t.TempDir()
	w.Write("d/f", "inside", 0o644)
	e1 := call(t, st, func() { w.Write("d/f", "changed", 0o644) })
	e2 := call(t, st, func() { w.Remove("d"); w.Symlink(outside, "d") })
	if _, err := st.Rollback(ctx, e1.ID, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if des, _ := os.ReadDir(outside); len(des) != 0 {
		t.Fatalf("rollback wrote outside the workspace: %v", des)
	}
	if data, _ := os.ReadFile(filepath.Join(w.Dir, "d/f")); string(data) != "inside" {
		t.Fatalf("d/f = %q", data)
	}
	// Undo of e1 alone when d is an outward symlink: a conflict, and with
	// --force the symlink is replaced, never followed.
	if _, err := st.Undo(ctx, "", false, snapshot.CallInfo{}); err != nil { // undo the rollback
		t.Fatal(err)
	}
	_ = e2
	if _, err := st.Undo(ctx, e1.ID, false, snapshot.CallInfo{}); !errors.Is(err, snapshot.ErrConflict) {
		t.Fatalf("undo across a symlink swap: %v, want conflict", err)
	}
	if _, err := st.Undo(ctx, e1.ID, true, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if des, _ := os.ReadDir(outside); len(des) != 0 {
		t.Fatalf("forced undo wrote outside the workspace: %v", des)
	}
}

// TestUnreadable runs as an unprivileged user (re-executing itself as
// nobody when run as root) so that permissions really apply.
func TestUnreadable(t *testing.T) {
	if ws := os.Getenv("SNAPSHOT_UNREADABLE_WS"); ws != "" {
		unreadableChild(t, ws, os.Getenv("SNAPSHOT_UNREADABLE_STATE"))
		return
	}
	base := t.TempDir()
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Mkdir(state, 0o755))
	cmdPath := os.Args[0]
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// Copy the test binary where nobody can run it; hand them the dirs.
		must(t, os.Chmod(filepath.Dir(base), 0o755))
		must(t, os.Chmod(base, 0o755))
		cmdPath = filepath.Join(base, "snapshot.test")
		src, err := os.Open(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.OpenFile(cmdPath, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(dst, src)
		src.Close()
		dst.Close()
		for _, d := range []string{ws, state} {
			must(t, os.Chown(d, 65534, 65534))
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := exec.Command(cmdPath, "-test.run=^TestUnreadable$", "-test.v")
	cmd.Env = append(os.Environ(), "SNAPSHOT_UNREADABLE_WS="+ws, "SNAPSHOT_UNREADABLE_STATE="+state, "HOME="+base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = base
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestUnreadable") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func unreadableChild(t *testing.T, ws, state string) {
	ctx := context.Background()
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	w := snapshottest.W{T: t, Dir: ws}
	e := call(t, st, func() { w.Write("secret", "hidden", 0o000); w.Write("ok", "fine", 0o644) })
	var secret *snapshot.Node
	for _, c := range e.Changes {
		if c.Path == "secret" {
			secret = c.New
		}
	}
	if secret == nil || !secret.Unreadable || secret.Hash != "" {
		t.Fatalf("unreadable file recorded as %+v", secret)
	}
	// Deleting it can be journaled; undoing the deletion cannot restore
	// content that was never readable, and says so.
	e2 := call(t, st, func() { w.Remove("secret") })
	_, err = st.Undo(ctx, e2.ID, false, snapshot.CallInfo{})
	if err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("undo of deleting an unreadable file: %v", err)
	}
	// Undo of the call that created it removes it again.
	w.Write("secret", "hidden", 0o000)
	call(t, st, func() {})
	// An unreadable directory is a clear error, not a panic or a silent gap.
	w.Mkdir("locked", 0o000)
	_, err = st.Begin(ctx, snapshot.CallInfo{}, snapshot.Whole())
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("scan of an unreadable directory: %v", err)
	}
	w.Chmod("locked", 0o755)
}

// TestUndoAndRollbackReadOnlyLaterEntries: undo and rollback read the
// journal from their target on, never the entries before it, so an
// unreadable old entry neither blocks them nor costs them anything.
func TestUndoAndRollbackReadOnlyLaterEntries(t *testing.T) {
	ctx := context.Background()
	w, st := newWS(t)
	old := call(t, st, func() { w.Write("a.txt", "a\n", 0o644) })
	to := call(t, st, func() { w.Write("b.txt", "one\n", 0o644) })
	last := call(t, st, func() { w.Write("b.txt", "two\n", 0o644) })
	if err := os.WriteFile(filepath.Join(st.Dir(), "journal", old.ID+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Undo(ctx, last.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("undo %s with an unreadable older entry: %v", last.ID, err)
	}
	if got := readFile(t, w.Dir, "b.txt"); got != "one\n" {
		t.Fatalf("after undo b.txt = %q, want %q", got, "one\n")
	}
	if _, err := st.Rollback(ctx, to.ID, snapshot.CallInfo{}); err != nil {
		t.Fatalf("rollback to %s with an unreadable older entry: %v", to.ID, err)
	}
	if _, err := os.Lstat(filepath.Join(w.Dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after rollback to just before %s, b.txt: %v, want absent", to.ID, err)
	}
	if got := readFile(t, w.Dir, "a.txt"); got != "a\n" {
		t.Fatalf("a.txt = %q after rollback, want it untouched", got)
	}
}
