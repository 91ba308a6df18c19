//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// The MCP TypeScript client harness (integration/mcpclient) is installed
// with npm into a cache directory outside the repository, once per run.
var (
	npmOnce sync.Once
	npmDir  string
	npmErr  error

	imageOnce sync.Once
	imageErr  error
)

// testCacheDir is the directory name under the tests' cache
// ($XDG_CACHE_HOME or ~/.cache, then agentbox-test), kept between runs.
func testCacheDir(name string) (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "agentbox-test", name), nil
}

// mcpClientDir returns a directory holding the harness and its installed
// dependencies (the versions package.json pins). It fails the test when
// node or npm is missing: these checks never skip.
func mcpClientDir(t *testing.T) string {
	t.Helper()
	npmOnce.Do(func() {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				npmErr = fmt.Errorf("%s is required for the MCP client checks (apt-get install nodejs npm): %v", tool, err)
				return
			}
		}
		npmDir, npmErr = testCacheDir("npm")
		if npmErr != nil {
			return
		}
		if err := os.MkdirAll(npmDir, 0o755); err != nil {
			npmErr = err
			return
		}
		src := filepath.Join(repoRoot, "integration", "mcpclient")
		pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
		if err != nil {
			npmErr = err
			return
		}
		old, _ := os.ReadFile(filepath.Join(npmDir, "package.json"))
		_, statErr := os.Stat(filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
		if !bytes.Equal(old, pkg) || statErr != nil {
			if err := os.WriteFile(filepath.Join(npmDir, "package.json"), pkg, 0o644); err != nil {
				npmErr = err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error")
			cmd.Dir = npmDir
			if out, err := cmd.CombinedOutput(); err != nil {
				npmErr = fmt.Errorf("npm install in %s: %v\n%s", npmDir, err, out)
				return
			}
		}
		// The script itself always comes fresh from the repository.
		script, err := os.ReadFile(filepath.Join(src, "client.mjs"))
		if err == nil {
			err = os.WriteFile(filepath.Join(npmDir, "client.mjs"), script, 0o644)
		}
		npmErr = err
	})
	if npmErr != nil {
		t.Fatal(npmErr)
	}
	return npmDir
}

// ensureHostImage builds agentbox/host when the engine lacks it.
func ensureHostImage(t *testing.T) {
	t.Helper()
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		imageErr = images.Ensure(ctx, cli, images.Host)
	})
	if imageErr != nil {
		t.Fatalf("image %s: %v", images.Host, imageErr)
	}
}

// mcpEnv is what one `agentbox mcp` under test needs: a workspace owned
// by the test uid, its own state dir and config file.
type mcpEnv struct {
	ws, state, cfg string
	// cancelFile is created when the long call's container is seen.
	cancelFile string
}

// mcpTestConfig is the config of the MCP tests. They test the approval
// flows, so a dangerous command asks (tools.auto_allow_sandboxed off);
// the tests of the default, contained commands running unasked, turn it
// back on (permit_test.go).
const mcpTestConfig = `tools:
  auto_allow_sandboxed: false
  allow:
    - "Bash(sleep:*)"
mcp:
  history_tool: true
  undo_tool: true
  progress_interval: 200ms
  approval_timeout: 30s
`

func newMCPEnv(t *testing.T, extraConfig string) mcpEnv {
	t.Helper()
	ensureHostImage(t)
	ws := newWorkspace(t)
	dir := t.TempDir()
	e := mcpEnv{ws: ws, state: filepath.Join(dir, "state"), cfg: filepath.Join(dir, "config.yaml"), cancelFile: filepath.Join(dir, "cancel-now")}
	if err := os.WriteFile(e.cfg, []byte(mcpTestConfig+extraConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// args are the global flags for this environment, then args.
func (e mcpEnv) args(args ...string) []string {
	return append([]string{"--workspace", e.ws, "--state-dir", e.state, "--config", e.cfg}, args...)
}

// writeFile creates a workspace file owned by the workspace owner.
func (e mcpEnv) writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(e.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(p); d != e.ws && strings.HasPrefix(d, e.ws); d = filepath.Dir(d) {
		if err := os.Chown(d, wsUID, wsGID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, wsUID, wsGID); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentboxCLI runs the binary with this environment's flags.
func (e mcpEnv) agentboxCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, e.args(args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("agentbox %v: %v", args, err)
	}
	return out.String(), 0
}

// workspaceContainers lists the containers (any state) of a workspace.
func workspaceContainers(ctx context.Context, ws string) ([]container.Summary, error) {
	return cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelWorkspace+"="+ws))})
}

// waitNoContainers waits until no container of ws is left.
func waitNoContainers(t *testing.T, ws string, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	var list []container.Summary
	if !eventually(within, 250*time.Millisecond, func() bool {
		var err error
		list, err = workspaceContainers(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		return len(list) == 0
	}) {
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID[:12]+" "+c.State)
		}
		t.Fatalf("%d container(s) of the workspace leaked: %s", len(list), strings.Join(ids, ", "))
	}
}

// runningCommand finds a container of ws whose processes include a
// command line containing needle.
func runningCommand(ctx context.Context, ws, needle string) (string, error) {
	list, err := workspaceContainers(ctx, ws)
	if err != nil {
		return "", err
	}
	for _, c := range list {
		if c.State != "running" {
			continue
		}
		top, err := cli.ContainerTop(ctx, c.ID, nil)
		if err != nil {
			continue
		}
		for _, p := range top.Processes {
			if strings.Contains(strings.Join(p, " "), needle) {
				return c.ID, nil
			}
		}
	}
	return "", nil
}

// tsStep is one step of a harness plan; tsResult one observation.
type tsStep map[string]any
type tsResult map[string]any

// runTS runs the TypeScript client with plan and returns what it saw.
func runTS(t *testing.T, plan map[string]any) []tsResult {
	t.Helper()
	dir := mcpClientDir(t)
	f := filepath.Join(t.TempDir(), "plan.json")
	b, _ := json.Marshal(plan)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.mjs"), f)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s", err, stderr.String())
	}
	var res []tsResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, r := range res {
		if r["op"] == "fatal" {
			t.Fatalf("client failed: %v\nstderr:\n%s", r["error"], stderr.String())
		}
	}
	return res
}

func (r tsResult) text() string {
	var b strings.Builder
	cs, _ := r["content"].([]any)
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if s, ok := m["text"].(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func (r tsResult) isError() bool { v, _ := r["isError"].(bool); return v }

func (r tsResult) errorKind() string {
	meta, _ := r["meta"].(map[string]any)
	ab, _ := meta["agentbox"].(map[string]any)
	e, _ := ab["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}
