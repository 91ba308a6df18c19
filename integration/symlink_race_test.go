//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// Symlink-swap races: while agentbox works on a path, something in the
// workspace keeps exchanging a directory on it with a symlink (to .git,
// the build cache, /tmp, host files and sockets). Each test attacks one
// moment of use (the tool-level Write, init's write beneath the root,
// the mounts of a starting container); no write and no mount may land
// anywhere but where the call was judged.

// TestRedteamWriteThroughSwappedSymlink: Write of a new, unprotected path
// l/commondir while something else in the workspace (a background job in
// another container; here the test, which is the same to agentbox) keeps
// exchanging l between a real directory and a symlink to .git. The
// protected-path check resolves l when the call is judged; the sandboxed
// `mkdir -p; mv` of the Write resolves it again later, and the call's
// changeset records only l/commondir as written (no-follow), so a write
// that landed in .git is neither asked about nor reverted. .git/commondir
// is not mounted read-only when it does not exist, and it redirects every
// host git command to another directory's config (core.fsmonitor runs on
// `git status`).
func TestRedteamWriteThroughSwappedSymlink(t *testing.T) {
	e := newRTEnv(t, "")
	e.gitRepo(t)
	e.file(t, "b/.keep", "")
	link := filepath.Join(e.ws, "l")
	alt := filepath.Join(e.ws, "l.alt")
	must(t, os.Rename(filepath.Join(e.ws, "b"), link))
	must(t, os.Symlink(".git", alt))
	must(t, os.Lchown(alt, wsUID, wsGID))

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Renameat2(unix.AT_FDCWD, link, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	landed := filepath.Join(e.ws, ".git", "commondir")
	for i := 0; i < 25; i++ {
		b, _ := json.Marshal(map[string]string{"file_path": filepath.Join(link, "commondir"), "content": "../evil\n"})
		out, _ := e.run(t, "tool", "Write", string(b), "--json")
		if _, err := os.Lstat(landed); err == nil {
			t.Logf("attempt %d: %s", i+1, out)
			break
		}
		// A write that landed in the directory: gone again, so that the
		// next Write is of a new file.
		for _, p := range []string{link, alt} {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				os.Remove(filepath.Join(p, "commondir"))
			}
		}
	}
	close(stop)
	<-done
	if b, err := os.ReadFile(landed); err == nil {
		t.Errorf("a Write of l/commondir landed in .git/commondir (%q) without approval and was not reverted", b)
	}
}

// TestRedteam3WriteRacesSymlinkSwap: under gVisor the seccomp profile's
// ENOSYS for openat2 arrives as EPERM, and init's Write resolves one name
// at a time with openat(O_NOFOLLOW) instead. A command running at the
// same time swaps a parent directory of the file being written for a
// symlink (to the build cache, which is writable and outside the
// workspace, to /tmp, to .git/hooks) and back, as fast as it can, while
// the executor writes files beneath it. No write may land anywhere but
// beneath the real directory.
func TestRedteam3WriteRacesSymlinkSwap(t *testing.T) {
	ws := newWorkspace(t)
	for _, d := range []string{"d", ".git", ".git/hooks"} {
		must(t, os.Mkdir(filepath.Join(ws, d), 0o755))
		must(t, os.Chown(filepath.Join(ws, d), wsUID, wsGID))
	}
	must(t, os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	state := t.TempDir()
	r, _ := newRunnerOpts(t, ws, func(c *config.Config) { c.Sandbox.Image = images.Host; c.StateDir = state })
	const dur = 20
	racer := `
import os, time, sys
end = time.time() + float(sys.argv[1]); n = 0
targets = ["/.agentbox/cache", "/tmp", ".git/hooks", "/"]
while time.time() < end:
    for tgt in targets:
        try:
            os.rename("d", "d.real"); os.symlink(tgt, "d")
            time.sleep(0.0005)
            os.unlink("d"); os.rename("d.real", "d"); n += 1
        except OSError as e:
            pass
print("swaps", n)
`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan sandbox.Result, 1)
	go func() {
		res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"python3", "-c", racer, "20"}, Timeout: 2 * time.Minute})
		if err != nil {
			t.Errorf("racer: %v", err)
		}
		done <- res
	}()
	time.Sleep(3 * time.Second)
	end := time.Now().Add(dur * time.Second)
	written, refused := 0, 0
	for i := 0; time.Now().Before(end); i++ {
		err := r.WriteFile(ctx, sandbox.FileWrite{Path: filepath.Join(ws, "d", "sub", "rt3-"+strconv.Itoa(i)), Content: []byte("x"), Mode: 0o644})
		if err != nil {
			refused++
		} else {
			written++
		}
	}
	res := <-done
	t.Logf("racer %q; writes: %d done, %d refused", strings.TrimSpace(string(res.Stdout)), written, refused)
	if written == 0 || refused == 0 {
		t.Logf("the race was not close (every write %s)", map[bool]string{true: "refused", false: "succeeded"}[written == 0])
	}
	// Every rt3-* file must be beneath ws/d (or its renamed self).
	var escaped []string
	for _, root := range []string{state, ws} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "pins" {
				return filepath.SkipDir // the workspace itself, pinned for a container starting
			}
			if err == nil && strings.HasPrefix(d.Name(), "rt3-") {
				rel, _ := filepath.Rel(ws, p)
				if !strings.HasPrefix(rel, "d/sub/") && !strings.HasPrefix(rel, "d.real/sub/") {
					escaped = append(escaped, p)
				}
			}
			return nil
		})
	}
	if len(escaped) > 0 {
		t.Fatalf("writes landed outside the directory they named: %v", escaped)
	}
}

// TestBoundarySwapRace is the red team's attack: a background command in
// one session flips .git (and a custom protected path) with
// renameat2(RENAME_EXCHANGE) against decoys whose protected entries are
// symlinks to a host file, a host directory and a host unix socket, for
// a minute, while another session makes calls that look for any foreign
// mount or socket and try to use it. Half of the calls come from a runner
// that pins its bind sources, half from one that cannot (init's check of
// what got mounted is then the only guard). Nothing may succeed.
func TestBoundarySwapRace(t *testing.T) {
	dur := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("AGENTBOX_RACE_DURATION")); err == nil {
		dur = d
	}
	ws := newWorkspace(t)
	host, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	secretFile := filepath.Join(host, "secret.txt")
	must(t, os.WriteFile(secretFile, []byte("HOSTSECRET\n"), 0o644))
	secretDir := filepath.Join(host, "dir")
	must(t, os.Mkdir(secretDir, 0o755))
	must(t, os.WriteFile(filepath.Join(secretDir, "HOSTSECRETDIR"), nil, 0o644))
	sock := filepath.Join(host, "engine.sock")
	ln, err := net.Listen("unix", sock)
	must(t, err)
	var socketHits atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			socketHits.Add(1)
			c.Write([]byte("HOSTSOCKET\n"))
			c.Close()
		}
	}()
	defer ln.Close()
	must(t, os.Chmod(sock, 0o777))

	// The flipper's workspace state: the real .git and custom, and decoys.
	mk := func(rel string, dir bool) {
		p := filepath.Join(ws, rel)
		if dir {
			must(t, os.MkdirAll(p, 0o755))
		} else {
			must(t, os.WriteFile(p, []byte("real\n"), 0o644))
		}
	}
	mk(".git/hooks", true)
	mk(".git/info", true)
	mk(".git/config", false)
	mk(".git/HEAD", false)
	mk("custom", true)
	mk(".decoy", true)
	must(t, os.Symlink(secretFile, filepath.Join(ws, ".decoy", "config")))
	must(t, os.Symlink(secretDir, filepath.Join(ws, ".decoy", "hooks")))
	must(t, os.Symlink(sock, filepath.Join(ws, ".decoy", "info")))
	must(t, os.WriteFile(filepath.Join(ws, ".decoy", "HEAD"), nil, 0o644))
	must(t, os.Symlink(sock, filepath.Join(ws, "custom.decoy")))
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error { return os.Lchown(p, wsUID, wsGID) })

	mutate := func(c *config.Config) {
		c.Sandbox.Image = images.Host
		c.Sandbox.ProtectedPaths = append(c.Sandbox.ProtectedPaths, "custom")
		c.Sandbox.PoolSize = 2
	}
	// The attacker's runner: its container starts before anything is
	// mounted over .git? No: it runs in a container whose .git is a mount
	// point, so it cannot rename .git itself — it would get EBUSY. The
	// flipper therefore also runs host-side, which models every other
	// route to a swap (a container started before .git existed, another
	// tool on the host).
	attacker, _ := newRunnerOpts(t, ws, mutate)
	// Bursts of flips as fast as it can for 100 ms (racing container
	// starts: tens of milliseconds lie between Docker resolving a path and
	// init checking it), then a still moment with the real .git in place
	// (calls then run, and show what a container got).
	flip := `import ctypes, time, sys
libc = ctypes.CDLL(None, use_errno=True)
end = time.time() + float(sys.argv[1])
n = 0; busy = 0
while time.time() < end:
    burst = time.time() + 0.1
    k = 0
    while time.time() < burst or k % 2:
        k += 1
        for a, b in ((b".git", b".decoy"), (b"custom", b"custom.decoy")):
            if libc.renameat2(-100, a, -100, b, 2) != 0:
                busy += 1
            else:
                n += 1
    time.sleep(0.4)
print("flips", n, "refused (EBUSY)", busy)
`
	// The runners are opened before the flippers start: opening checks
	// the workspace once (a .git/config that is a symlink at that moment
	// refuses it); the race under test is every call's hand-over.
	var refusedLog bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &refusedLog, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pinned, _ := newRunnerOpts(t, ws, mutate, withLogger(logger))
	unpinned, _ := newRunnerOpts(t, ws, mutate, docker.WithoutPins(), withLogger(logger))
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	var inside sandbox.Result
	var insideErr error
	go func() {
		defer wg.Done()
		inside, insideErr = attacker.Run(ctx, sandbox.Spec{Argv: []string{"python3", "-c", flip, strconv.Itoa(int(dur.Seconds()))}, Timeout: dur + time.Minute})
	}()
	time.Sleep(2 * time.Second) // the in-sandbox flipper starts first
	go func() {
		defer wg.Done()
		script := filepath.Join(host, "flip.py")
		if err := os.WriteFile(script, []byte(flip), 0o644); err != nil {
			t.Error(err)
			return
		}
		c := exec.CommandContext(ctx, "python3", script, strconv.Itoa(int(dur.Seconds())))
		c.Dir = ws
		out, err := c.CombinedOutput()
		t.Logf("host flipper: %s %v", bytes.TrimSpace(out), err)
	}()

	probe := `cat /proc/self/mountinfo | awk '{print $4}' | grep -F "` + host + `" && echo ESCAPED-MOUNT
grep -rs HOSTSECRET .git custom 2>/dev/null && echo ESCAPED-READ
ls .git/hooks .git/info custom 2>/dev/null | grep -q HOSTSECRETDIR && echo ESCAPED-DIR
for s in .git/info .git/config .git/hooks custom; do [ -S "$s" ] && echo ESCAPED-SOCKET $s && python3 -c 'import socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); print(c.recv(64))' "$s"; done
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type s -print 2>/dev/null | sed 's/^/SOCKET /'
true`
	var calls, ran, refused, escaped int
	start := time.Now()
	for i := 0; time.Since(start) < dur || calls < 200; i++ {
		r := pinned
		if i%2 == 1 {
			r = unpinned
		}
		res, err := r.Run(ctx, sandbox.Spec{Shell: probe, Timeout: 30 * time.Second})
		calls++
		switch {
		case err == nil:
			ran++
			if out := string(res.Stdout); strings.Contains(out, "ESCAPED") || strings.Contains(out, "SOCKET ") {
				escaped++
				t.Errorf("call %d escaped:\n%s", i, out)
			}
		case errors.Is(err, sandbox.ErrUnsafeWorkspace) || errors.Is(err, sandbox.ErrUnavailable):
			refused++
			time.Sleep(20 * time.Millisecond)
		default:
			t.Errorf("call %d: %v", i, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	wg.Wait()
	t.Logf("in-sandbox flipper: %s %s err=%v", bytes.TrimSpace(inside.Stdout), bytes.TrimSpace(inside.Stderr), insideErr)
	logMu.Lock()
	logged := strings.Count(refusedLog.String(), "level=WARN")
	logMu.Unlock()
	t.Logf("%d calls in %v: %d ran clean, %d refused (%d refusals logged), %d escaped; host socket connections: %d",
		calls, time.Since(start).Round(time.Second), ran, refused, logged, escaped, socketHits.Load())
	if escaped > 0 || socketHits.Load() > 0 {
		t.Fatalf("the boundary did not hold")
	}
	if calls < 200 {
		t.Errorf("only %d calls", calls)
	}
	if ran < 50 {
		t.Errorf("only %d calls ran: too few to show anything", ran)
	}
	if logged < refused {
		t.Errorf("%d refused calls, only %d refusals logged", refused, logged)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
