//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Attacks on the front doors themselves (after issue 19): another local
// account (nobody) goes for the place the door lives rather than the door.

// asNobody runs argv as the other local account and returns its output
// and error.
func asNobody(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestFrontDoorAttackSwappedSocketDir: the owner serves on a socket in a
// 0700 directory of theirs that sits in a directory nobody owns (a shared
// project or scratch directory). Nobody cannot enter the 0700 directory,
// but may rename it aside and put a directory and socket of their own at
// the path, so that the owner's client talks to nobody's server. agentbox
// must refuse to listen in such a place (and so must the token file,
// which shares the check).
func TestFrontDoorAttackSwappedSocketDir(t *testing.T) {
	e := newMCPEnv(t, "")
	base := t.TempDir()
	// Nobody must reach the shared directory (t.TempDir's are 0700).
	for _, d := range []string{base, filepath.Dir(base)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(shared, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shared, "run", "mcp.sock")

	cmd := exec.Command(agentbox, e.args("mcp", "--socket", sock)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTBOX_MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &syncBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			err := werr
			// Refused: the reason names the directory nobody owns.
			if err == nil || !strings.Contains(logs.String(), shared) || !strings.Contains(logs.String(), "not private") {
				t.Fatalf("agentbox exited (%v) without saying why the place is unsafe:\n%s", err, logs.String())
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := os.Lstat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentbox neither served nor refused:\n%s", logs.String())
		}
	}
	// It serves: nobody swaps the private directory for one of their own.
	out, err := asNobody(t, "mv", filepath.Join(shared, "run"), filepath.Join(shared, "run.owners"))
	if err != nil {
		t.Fatalf("agentbox served below a directory nobody owns, but nobody's mv failed (%v: %s)", err, out)
	}
	if out, err := asNobody(t, "mkdir", filepath.Join(shared, "run")); err != nil {
		t.Fatalf("mkdir as nobody: %v %s", err, out)
	}
	fi, _ := os.Stat(filepath.Join(shared, "run"))
	st := fi.Sys().(*syscall.Stat_t)
	t.Fatalf("agentbox served on %s below a directory owned by uid %d, who moved the server's private directory aside and now owns the path clients connect to (uid %d)", sock, nobodyUID, st.Uid)
}
