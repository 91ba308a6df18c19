//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
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
// and every write it tries fails with EROFS. (Contained commands are not
// auto-allowed here, so a command that is not read-only is refused.)
func TestBoundaryReadOnlyThroughTools(t *testing.T) {
	ws := newWorkspace(t)
	must(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("keep me\n"), 0o644))
	must(t, os.Chown(filepath.Join(ws, "notes.txt"), wsUID, wsGID))
	state := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfgFile, []byte("classifier:\n  read_only: [touch, rm, cp, tee]\ntools:\n  auto_allow_sandboxed: false\nsandbox:\n  image: agentbox/host\n  pool_size: 0\n"), 0o644))
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
			if !eventually(60*time.Second, 20*time.Millisecond, func() bool {
				b, _ := os.ReadFile(ticks)
				return bytes.Count(b, []byte("\n")) > 10
			}) {
				cmd.Process.Kill()
				t.Fatalf("the command never ran: %s", out.String())
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
