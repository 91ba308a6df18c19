package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeDockerd writes a shell script standing in for dockerd.
func fakeDockerd(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dockerd")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// testPaths are private-engine paths for a fresh state dir, removed after
// the test even when the run dir fell back to a short path outside it.
func testPaths(t *testing.T) paths {
	p := privatePaths(t.TempDir())
	t.Cleanup(func() { os.RemoveAll(p.Run) })
	return p
}

func TestStartPrivateReportsEarlyExitWithLogTail(t *testing.T) {
	p := testPaths(t)
	dockerd := fakeDockerd(t, `echo "failed to start daemon: pretend error"; exit 3`)
	_, err := startPrivate(context.Background(), dockerd, p, 10*time.Second, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("startPrivate succeeded with a dockerd that exits")
	}
	for _, want := range []string{"exited", "pretend error", p.Log} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestStartPrivateTimesOutAndKills(t *testing.T) {
	p := testPaths(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	dockerd := fakeDockerd(t, `echo $$ > `+pidFile+`; echo "still initializing"; exec sleep 60`)
	start := time.Now()
	_, err := startPrivate(context.Background(), dockerd, p, 500*time.Millisecond, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "did not answer within") || !strings.Contains(err.Error(), "still initializing") {
		t.Fatalf("err = %v, want a timeout with the log tail", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("timeout took %s", d)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var pid int
	for _, c := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(c-'0')
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the dockerd that timed out (pid %d) is still running", pid)
	}
}

func TestStartPrivateHonoursContext(t *testing.T) {
	p := testPaths(t)
	dockerd := fakeDockerd(t, `exec sleep 60`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := startPrivate(ctx, dockerd, p, time.Minute, slog.New(slog.DiscardHandler))
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestLockStartSerialises(t *testing.T) {
	p := testPaths(t)
	unlock, err := lockStart(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockStart(ctx, p); err == nil {
		t.Fatal("second lockStart succeeded while the first holds the lock")
	}
	unlock()
	unlock2, err := lockStart(context.Background(), p)
	if err != nil {
		t.Fatalf("lockStart after unlock: %v", err)
	}
	unlock2()
}
