package snapshot_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/snapshot/snapshottest"
)

// TestCrashChild is the child of TestCrash: it runs random operations on a
// store until it is killed (or kills itself at a hook point).
func TestCrashChild(t *testing.T) {
	ws, state := os.Getenv("SNAPSHOT_CRASH_WS"), os.Getenv("SNAPSHOT_CRASH_STATE")
	if ws == "" {
		return // not the child
	}
	seed, _ := strconv.ParseUint(os.Getenv("SNAPSHOT_CRASH_SEED"), 10, 64)
	dieAt, _ := strconv.Atoi(os.Getenv("SNAPSHOT_CRASH_HOOK"))
	hits := 0
	die := func() {
		hits++
		if dieAt > 0 && hits == dieAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	snapshot.SetAtomicWriteHook(die)
	ctx := context.Background()
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithHook(func(string) { die() }))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	r := rand.New(rand.NewPCG(seed, 99))
	w := snapshottest.W{T: t, Dir: ws}
	for i := 0; i < 40; i++ {
		switch k := r.IntN(10); {
		case k < 5:
			c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: "random"}, snapshot.Whole())
			if err != nil {
				fmt.Println("begin:", err)
				os.Exit(3)
			}
			for j := 0; j < 1+r.IntN(3); j++ {
				snapshottest.RandomChange(r, w)
			}
			if _, err := c.Finish(ctx); err != nil {
				fmt.Println("finish:", err)
				os.Exit(3)
			}
		case k < 7:
			rel := []string{"a", "b", "c", "a/a", "b/c"}[r.IntN(5)]
			if fi, err := os.Lstat(filepath.Join(ws, rel)); err == nil && !fi.Mode().IsRegular() {
				continue
			}
			if dir := filepath.Dir(rel); dir != "." {
				if fi, err := os.Lstat(filepath.Join(ws, dir)); err != nil || !fi.IsDir() {
					continue
				}
			}
			c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: rel}, snapshot.File(rel))
			if err != nil {
				fmt.Println("begin file:", err)
				os.Exit(3)
			}
			if err := os.WriteFile(filepath.Join(ws, rel), []byte(fmt.Sprint("written ", r.IntN(1000))), 0o644); err != nil {
				fmt.Println("write file:", err)
				os.Exit(3)
			}
			if _, err := c.Finish(ctx); err != nil {
				fmt.Println("finish file:", err)
				os.Exit(3)
			}
		case k < 8:
			_, err := st.Undo(ctx, "", false, snapshot.CallInfo{})
			if err != nil && !errors.Is(err, snapshot.ErrConflict) && !errors.Is(err, snapshot.ErrNotFound) && !strings.Contains(err.Error(), "changed nothing") && !strings.Contains(err.Error(), "never recorded") {
				fmt.Println("undo:", err)
				os.Exit(3)
			}
		case k < 9:
			list, err := st.List(ctx, 10)
			if err != nil || len(list) == 0 {
				fmt.Println("list:", err)
				os.Exit(3)
			}
			if _, err := st.Rollback(ctx, list[r.IntN(len(list))].ID, snapshot.CallInfo{}); err != nil && !strings.Contains(err.Error(), "never recorded") {
				fmt.Println("rollback:", err)
				os.Exit(3)
			}
		default:
			if _, err := st.Checkpoint(ctx, "cp", snapshot.CallInfo{}); err != nil {
				fmt.Println("checkpoint:", err)
				os.Exit(3)
			}
		}
	}
	os.Exit(0)
}

// TestCrash kills a child doing snapshot, finish, undo, rollback and
// checkpoint at random moments (SIGKILL), then checks that the store and
// journal open cleanly and that a rollback still restores exactly.
func TestCrash(t *testing.T) {
	runs := 220
	if testing.Short() {
		runs = 40
	}
	ctx := context.Background()
	base := t.TempDir()
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	w := snapshottest.W{T: t, Dir: ws}
	w.Write("a", "a0", 0o644)
	w.Write("b/c", "c0", 0o600)
	w.Symlink("../a", "b/l")
	w.Mkdir("c/empty", 0o700)
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	cp0, err := st.Checkpoint(ctx, "start", snapshot.CallInfo{})
	if err != nil {
		t.Fatal(err)
	}
	saved0 := snapshottest.Capture(t, ws)
	r := rand.New(rand.NewPCG(42, 1))
	killedByHook, killedByTimer, finished := 0, 0, 0
	for i := 0; i < runs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SNAPSHOT_CRASH_WS="+ws, "SNAPSHOT_CRASH_STATE="+state, fmt.Sprint("SNAPSHOT_CRASH_SEED=", i))
		byHook := i%2 == 1
		if byHook {
			cmd.Env = append(cmd.Env, fmt.Sprint("SNAPSHOT_CRASH_HOOK=", 1+r.IntN(80)))
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var lines []string
		ready := false
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "ready" {
				ready = true
				break
			}
		}
		if !byHook && ready {
			time.Sleep(time.Duration(r.IntN(40_000)) * time.Microsecond)
			cmd.Process.Kill()
		}
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
			if byHook {
				killedByHook++
			} else {
				killedByTimer++
			}
		case err == nil:
			finished++
		default:
			t.Fatalf("run %d: child failed: %v\n%s", i, err, strings.Join(lines, "\n"))
		}
		// The store opens cleanly and nothing is left pending.
		st, err := snapshot.Open(ctx, state, ws)
		if err != nil {
			t.Fatalf("run %d: open after crash: %v", i, err)
		}
		if _, err := st.List(ctx, 0); err != nil {
			t.Fatalf("run %d: list after crash: %v", i, err)
		}
		for _, d := range []string{"pending", "tmp"} {
			if des, _ := os.ReadDir(filepath.Join(st.Dir(), d)); len(des) != 0 {
				t.Fatalf("run %d: %s not empty after recovery: %v", i, d, des)
			}
		}
		if i%20 == 19 || i == runs-1 {
			if _, err := st.Rollback(ctx, cp0.ID, snapshot.CallInfo{}); err != nil {
				t.Fatalf("run %d: rollback: %v", i, err)
			}
			snapshottest.RequireEqual(t, fmt.Sprintf("run %d: rollback to the first checkpoint", i), saved0, snapshottest.Capture(t, ws))
		}
	}
	if killedByHook+killedByTimer < 200 && !testing.Short() {
		t.Fatalf("only %d kills (hook %d, timer %d, %d finished)", killedByHook+killedByTimer, killedByHook, killedByTimer, finished)
	}
	t.Logf("%d runs: killed %d at hook points, %d by timer; %d finished", runs, killedByHook, killedByTimer, finished)
}
