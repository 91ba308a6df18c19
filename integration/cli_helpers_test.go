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
)

// Helpers for tests that drive the real binary (CLI) against one
// workspace with its own state dir and config.

// rtEnv is one workspace with its own state dir and config.
type rtEnv struct {
	ws, state, cfg string
}

func newRTEnv(t *testing.T, config string) rtEnv {
	t.Helper()
	ws := newWorkspace(t)
	dir := t.TempDir()
	e := rtEnv{ws: ws, state: filepath.Join(dir, "state"), cfg: filepath.Join(dir, "config.yaml")}
	if config == "" {
		config = "sandbox:\n  pool_size: 0\n"
	}
	must(t, os.WriteFile(e.cfg, []byte(config), 0o600))
	return e
}

// run runs agentbox in this environment and returns its output and exit
// code.
func (e rtEnv) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append([]string{"--workspace", e.ws, "--state-dir", e.state, "--config", e.cfg}, args...)
	cmd := exec.CommandContext(ctx, agentbox, full...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost(), "AGENTBOX_SANDBOX_IMAGE="+testImage)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("agentbox %v: %v", args, err)
	}
	return out.String(), 0
}

// file writes name (slash-separated) in the workspace, owned by the
// workspace owner, with its parents.
func (e rtEnv) file(t *testing.T, name, data string) {
	t.Helper()
	p := filepath.Join(e.ws, filepath.FromSlash(name))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	for d := filepath.Dir(p); d != e.ws && strings.HasPrefix(d, e.ws); d = filepath.Dir(d) {
		must(t, os.Chown(d, wsUID, wsGID))
	}
	must(t, os.WriteFile(p, []byte(data), 0o644))
	must(t, os.Chown(p, wsUID, wsGID))
}

func (e rtEnv) read(name string) string {
	b, err := os.ReadFile(filepath.Join(e.ws, filepath.FromSlash(name)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// lastID is the journal id of the newest entry.
func (e rtEnv) lastID(t *testing.T) string {
	t.Helper()
	out, code := e.run(t, "history", "--json")
	if code != 0 {
		t.Fatalf("history: exit %d: %s", code, out)
	}
	var hist []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &hist); err != nil || len(hist) == 0 {
		t.Fatalf("history %q: %v", out, err)
	}
	return hist[0].ID
}

// gitRepo plants a minimal repository with a benign config.
func (e rtEnv) gitRepo(t *testing.T) {
	t.Helper()
	e.file(t, ".git/HEAD", "ref: refs/heads/main\n")
	e.file(t, ".git/config", benignGitConfig)
	e.file(t, ".git/hooks/README", "hooks\n")
	e.file(t, ".git/objects/info/packs", "")
	e.file(t, ".git/refs/heads/.keep", "")
}

const benignGitConfig = "[core]\n\trepositoryformatversion = 0\n"
