//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// TestBoundaryRootWorkspaceRefused: by default no command runs as uid 0.
func TestBoundaryRootWorkspaceRefused(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	cfg := testConfig(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := docker.New(ctx, cli, cfg, nil)
	if err == nil {
		r.Close(ctx)
		t.Fatal("a root-owned workspace was accepted without sandbox.allow_root_workspace")
	}
	if !errors.Is(err, sandbox.ErrUnsafeWorkspace) || !strings.Contains(err.Error(), "allow_root_workspace") {
		t.Fatalf("refusal %v does not name the way out", err)
	}
}

// TestBoundaryReadOnlyWorkspace: a command run with Spec.ReadOnly (what a
// call judged read-only gets) cannot create, modify, delete, rename or
// chmod anything in the workspace: every attempt fails with EROFS.
func TestBoundaryReadOnlyWorkspace(t *testing.T) {
	e := newEscape(t, nil)
	script := strings.Join([]string{
		"touch new.txt", "echo x >> README", "rm -f README", "mv README R2", "mkdir d", "chmod 777 README",
		"ln -s /etc l", "echo x > .git/HEAD", "rm -rf src", "truncate -s 0 src/main.go",
	}, "; echo rc=$?; ") + "; echo rc=$?"
	res, err := runIn(t, e.r, sandbox.Spec{Shell: script, ReadOnly: true, Timeout: 30 * time.Second})
	must(t, err)
	if n := strings.Count(string(res.Stdout), "rc=0"); n != 0 {
		t.Errorf("%d write(s) succeeded on a read-only workspace:\n%s\n%s", n, res.Stdout, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "Read-only file system") {
		t.Errorf("no EROFS reported: %s", res.Stderr)
	}
	e.intact(t)
}

// TestBoundaryReadOnlyThroughTools: a program an operator wrongly lists
// in classifier.read_only runs without approval and without a snapshot —
// and every write it tries fails with EROFS.
func TestBoundaryReadOnlyThroughTools(t *testing.T) {
	ws := newWorkspace(t)
	must(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("keep me\n"), 0o644))
	must(t, os.Chown(filepath.Join(ws, "notes.txt"), wsUID, wsGID))
	state := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfgFile, []byte("classifier:\n  read_only: [touch, rm, cp, tee]\nsandbox:\n  image: agentbox/host\n  pool_size: 0\n"), 0o644))
	before := tree(t, ws)
	for _, cmd := range []string{"touch created.txt", "rm -f notes.txt", "cp notes.txt copy.txt", "jobs -x rm -f notes.txt"} {
		out, err := runAgentbox(t, ws, state, cfgFile, "tool", "Bash", fmt.Sprintf(`{"command":%q}`, cmd), "--json")
		t.Logf("%s: %s", cmd, out)
		if err != nil && !strings.Contains(out, `"ok":false`) {
			t.Fatalf("%s: %v", cmd, err)
		}
		if strings.Contains(cmd, "touch") && !strings.Contains(out, "Read-only file system") {
			t.Errorf("%s: not refused by the kernel: %s", cmd, out)
		}
	}
	assertIntact(t, ws, before)
}

func runAgentbox(t *testing.T, ws, state, cfgFile string, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"--workspace", ws, "--state-dir", state}, args...)
	if cfgFile != "" {
		full = append([]string{"--config", cfgFile}, full...)
	}
	cmd := exec.Command(agentbox, full...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestBoundaryOrphanDies: SIGKILL the executor in the middle of a command;
// the command stops writing within a second.
func TestBoundaryOrphanDies(t *testing.T) {
	for _, mode := range []string{"exec", "tool"} {
		t.Run(mode, func(t *testing.T) {
			ws := newWorkspace(t)
			state := t.TempDir()
			loop := `while :; do echo tick >> ticks; sleep 0.02; done`
			var args []string
			if mode == "exec" {
				args = []string{"--workspace", ws, "--state-dir", state, "exec", "--", "sh", "-c", loop}
			} else {
				args = []string{"--workspace", ws, "--state-dir", state, "tool", "Bash", fmt.Sprintf(`{"command":%q,"timeout":60000}`, loop)}
			}
			cmd := exec.Command(agentbox, args...)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost(), "AGENTBOX_SANDBOX_IMAGE="+testImage, "AGENTBOX_TOOLS_MODE=bypassPermissions")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			must(t, cmd.Start())
			ticks := filepath.Join(ws, "ticks")
			deadline := time.Now().Add(60 * time.Second)
			for {
				if b, _ := os.ReadFile(ticks); bytes.Count(b, []byte("\n")) > 10 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the command never ran: %s", out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			must(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()
			time.Sleep(time.Second)
			fi1, err := os.Stat(ticks)
			must(t, err)
			time.Sleep(2 * time.Second)
			fi2, err := os.Stat(ticks)
			must(t, err)
			t.Logf("ticks file: %d bytes 1 s after the kill, %d bytes 3 s after", fi1.Size(), fi2.Size())
			if fi2.Size() != fi1.Size() {
				t.Errorf("the command was still writing more than a second after its executor was killed")
			}
		})
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
		os.WriteFile(script, []byte(flip), 0o644)
		c := exec.CommandContext(ctx, "python3", script, strconv.Itoa(int(dur.Seconds())))
		c.Dir = ws
		out, err := c.CombinedOutput()
		t.Logf("host flipper: %s %v", bytes.TrimSpace(out), err)
	}()

	var refusedLog bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &refusedLog, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pinned, _ := newRunnerOpts(t, ws, mutate, withLogger(logger))
	unpinned, _ := newRunnerOpts(t, ws, mutate, docker.WithoutPins(), withLogger(logger))
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

// runnerOpt is a docker.Option or the test's logger.
type runnerOpt any

type loggerOpt struct{ l *slog.Logger }

func withLogger(l *slog.Logger) runnerOpt { return loggerOpt{l} }

// newRunnerOpts is newRunner with docker options and a logger.
func newRunnerOpts(t *testing.T, ws string, mutate func(*config.Config), opts ...runnerOpt) (*docker.Runner, string) {
	t.Helper()
	cfg := testConfig(t, ws)
	if mutate != nil {
		mutate(cfg)
	}
	var dopts []docker.Option
	var log *slog.Logger
	for _, o := range opts {
		switch o := o.(type) {
		case docker.Option:
			dopts = append(dopts, o)
		case loggerOpt:
			log = o.l
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := docker.New(ctx, cli, cfg, log, dopts...)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.Close(ctx)
	})
	return r, ws
}
