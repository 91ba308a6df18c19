//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
)

// agentboxCmd runs the built binary against the test engine, with a
// state dir of its own.
func agentboxCmd(t *testing.T, ws string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return agentboxIn(t, ws, t.TempDir(), nil, args...)
}

// agentboxIn runs the built binary against the test engine in workspace
// ws with state dir state and the extra environment env.
func agentboxIn(t *testing.T, ws, state string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, append([]string{"--workspace", ws, "--state-dir", state}, args...)...)
	cmd.Env = append(append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost(), "AGENTBOX_SANDBOX_IMAGE="+testImage), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestSandboxExecCLI(t *testing.T) {
	ws := newWorkspace(t)
	out, errOut, code := agentboxCmd(t, ws, "exec", "--", "echo hi; echo oops >&2; pwd; touch made; exit 5")
	if code != 5 || out != "hi\n"+ws+"\n" || errOut != "oops\n" {
		t.Errorf("exec: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err != nil {
		t.Errorf("the command's file is not in the workspace: %v", err)
	}
	out, _, code = agentboxCmd(t, ws, "exec", "--", "echo", "two words", "$HOME")
	if code != 0 || out != "two words $HOME\n" {
		t.Errorf("argv exec: code %d stdout %q", code, out)
	}
	out, _, code = agentboxCmd(t, ws, "exec", "--json", "--", "echo hi; mkdir -p sub; cd sub; exit 2")
	var j struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Cwd      string `json:"cwd"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 2 || j.ExitCode != 2 || j.Stdout != "hi\n" || j.Cwd != filepath.Join(ws, "sub") {
		t.Errorf("exec --json: code %d %+v %v in %q", code, j, err, out)
	}
	start := time.Now()
	_, errOut, code = agentboxCmd(t, ws, "exec", "--timeout", "1s", "--", "trap '' TERM; sleep 30")
	if code != 137 || !strings.Contains(errOut, "timed out") || time.Since(start) > 20*time.Second {
		t.Errorf("timeout: code %d stderr %q after %v", code, errOut, time.Since(start))
	}
}

// TestSandboxHostImage runs the host image with the host's toolchain
// mounted: tools work, secrets stay out.
func TestSandboxHostImage(t *testing.T) {
	ws := newWorkspace(t)
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	r := openRunner(t, cfg)
	res, err := runIn(t, r, sandbox.Spec{Shell: `echo "bash $BASH_VERSION"; git --version; id -u; cat /etc/shadow; ls -A /root /home; ls -la /var/run/docker.sock /run/docker.sock ` + strings.TrimPrefix(cli.DaemonHost(), "unix://") + `; touch /usr/pwned; echo done`})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	if !strings.HasPrefix(out, "bash 5") || !strings.Contains(out, "git version") || !strings.Contains(out, "\n4242\n") || !strings.HasSuffix(out, "done\n") {
		t.Errorf("stdout %q stderr %q", out, res.Stderr)
	}
	shadow, _ := os.ReadFile("/etc/shadow")
	if first, _, _ := strings.Cut(string(shadow), "\n"); first != "" && strings.Contains(out, first) {
		t.Error("/etc/shadow readable")
	}
	for _, e := range []string{"No such file", "Read-only file system"} {
		if !strings.Contains(string(res.Stderr), e) {
			t.Errorf("stderr lacks %q: %s", e, res.Stderr)
		}
	}
	if _, err := os.Stat("/usr/pwned"); err == nil {
		os.Remove("/usr/pwned")
		t.Error("wrote to the host's /usr")
	}
}

func openRunner(t *testing.T, cfg *config.Config) sandbox.Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := newRunnerFromConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}
