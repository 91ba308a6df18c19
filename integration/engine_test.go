//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/versions"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// TestEngineConnect checks that discovery finds the engine TestMain uses
// and that the API version was negotiated down to what the daemon speaks.
func TestEngineConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = t.TempDir(), t.TempDir()
	c, info, err := engine.Connect(ctx, &cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	if info.Host == "" || info.Source == "" || info.Version == "" {
		t.Errorf("incomplete info %+v", info)
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if versions.GreaterThan(c.ClientVersion(), v.APIVersion) {
		t.Errorf("client speaks API %s, daemon only %s: negotiation did not happen", c.ClientVersion(), v.APIVersion)
	}
}

// TestEngineStatusJSON runs `agentbox engine status --json` and checks it
// prints exactly host, source and version, and that the host works as
// DOCKER_HOST.
func TestEngineStatusJSON(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command(agentbox, "engine", "status", "--json", "--workspace", ws)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("engine status: %v\n%s", err, stderrOf(err))
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("engine status --json printed %q: %v", out, err)
	}
	// host, source and version (the contract), and the sandbox backend
	// (with its runtime and whether the engine is remote, when set).
	for k := range m {
		switch k {
		case "host", "source", "version", "backend", "runtime", "remote":
		default:
			t.Errorf("engine status --json has an unknown field %q", k)
		}
	}
	for _, k := range []string{"host", "source", "version", "backend"} {
		if s, _ := m[k].(string); s == "" {
			t.Fatalf("engine status --json = %v, want a non-empty %s", m, k)
		}
	}
	// The host must be usable as DOCKER_HOST on its own.
	cmd = exec.Command(agentbox, "engine", "status", "--json", "--workspace", ws)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+m["host"].(string))
	out2, err := cmd.Output()
	if err != nil {
		t.Fatalf("engine status with DOCKER_HOST=%s: %v\n%s", m["host"], err, stderrOf(err))
	}
	var m2 map[string]string
	if err := json.Unmarshal(out2, &m2); err != nil || m2["host"] != m["host"] || m2["source"] != engine.SourceEnv {
		t.Errorf("with DOCKER_HOST=%s: %s (%v)", m["host"], out2, err)
	}
}

// TestEngineStatusNoEngine: with nothing to connect to, status exits
// non-zero and says what to do.
func TestEngineStatusNoEngine(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	cmd := exec.Command(agentbox, "engine", "status", "--json", "--workspace", ws, "--state-dir", state)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + state, "DOCKER_HOST=unix://" + state + "/none.sock", "XDG_RUNTIME_DIR=" + state}
	out, err := cmd.Output()
	if err == nil {
		// A default socket may exist on this host; then this case cannot
		// be shown here, but it must still not claim the missing DOCKER_HOST.
		if strings.Contains(string(out), "none.sock") {
			t.Fatalf("status reported an engine at a socket that does not exist: %s", out)
		}
		return
	}
	if msg := stderrOf(err); !strings.Contains(msg, "agentbox engine start") {
		t.Errorf("no-engine message does not say what to do: %q", msg)
	}
}

// TestEngineStopLeavesOthersAlone: stop with a state dir that has no
// private engine must not stop the engine in use.
func TestEngineStopLeavesOthersAlone(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	cmd := exec.Command(agentbox, "engine", "stop", "--workspace", ws, "--state-dir", state)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("engine stop: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.ServerVersion(ctx); err != nil {
		t.Fatalf("engine no longer answers after stopping an unrelated state dir: %v", err)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestEngineAutoStart: with no engine reachable, `agentbox mcp` starts
// the private one by itself before serving, says so once on stderr and
// keeps stdout for the protocol; the next process finds it running.
func TestEngineAutoStart(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + filepath.Join(base, "home"), "AGENTBOX_STATE_DIR=" + state, "XDG_STATE_HOME=", "DOCKER_HOST="}
	stop := func() {
		cmd := exec.Command(agentbox, "engine", "stop")
		cmd.Env = append(os.Environ(), env...)
		cmd.CombinedOutput()
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serve := func() string {
		cmd := exec.Command(agentbox, "--workspace", ws, "mcp")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "autostart", Version: "1"}, nil)
		sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("MCP over stdio after an engine start: %v\n%s", err, stderr.String())
		}
		tl, err := sess.ListTools(ctx, nil)
		if err != nil || len(tl.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		sess.Close()
		return stderr.String()
	}
	first := serve()
	if strings.Count(first, "starting agentbox's private engine") != 1 || !strings.Contains(first, "private engine") || !strings.Contains(first, "ready at unix://") {
		t.Fatalf("first start, stderr:\n%s", first)
	}
	if second := serve(); strings.Contains(second, "starting") {
		t.Fatalf("the second process started the engine again:\n%s", second)
	}
}
