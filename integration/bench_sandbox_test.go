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
)

// TestBenchSandboxPeers runs a short `agentbox bench sandbox` as `make
// bench` does on a fresh machine (bubblewrap installed, the bench
// workspace owned by an unprivileged uid): the bwrap row must run (bwrap
// runs as the workspace's owner), and every row is there, run or saying
// why not. Then, with no docker CLI on PATH, the docker rows say so and
// the bench still ends well with every other row.
func TestBenchSandboxPeers(t *testing.T) {
	bwrap := requireDebianTool(t, "bwrap", "bubblewrap")
	type row struct {
		Name    string  `json:"name"`
		N       int     `json:"n"`
		P50MS   float64 `json:"p50_ms"`
		Skipped string  `json:"skipped"`
	}
	run := func(path string) map[string]row {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, agentbox, "--state-dir", t.TempDir(), "bench", "sandbox", "--n", "3", "--sustained", "3", "--engine-n", "2", "--json")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "AGENTBOX_ENGINE_HOST="+cli.DaemonHost(), "PATH="+path)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("bench sandbox (PATH %s): %v\n%s\n%s", path, err, out.String(), errb.String())
		}
		var rows []row
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			t.Fatalf("bench sandbox --json: %v\n%s", err, out.String())
		}
		by := map[string]row{}
		for _, r := range rows {
			by[r.Name] = r
			if r.Skipped == "" && (r.N == 0 || r.P50MS <= 0) {
				t.Errorf("row %s ran but has no times: %+v", r.Name, r)
			}
		}
		for _, name := range []string{"agentbox-pool", "engine-cycle-x1", "engine-cycle-x4", "agentbox-pool-runsc", "docker-exec", "docker-run", "bwrap"} {
			if _, ok := by[name]; !ok {
				t.Errorf("no %s row (neither run nor skipped with a reason): %+v", name, rows)
			}
		}
		if len(rows) == 0 || rows[0].Name != "agentbox-pool" || rows[0].Skipped != "" {
			t.Errorf("the first row is not the pool's, run: %+v", rows)
		}
		return by
	}

	rows := run(os.Getenv("PATH"))
	if r := rows["bwrap"]; r.Skipped != "" || r.N != 3 {
		t.Errorf("bwrap row did not run: %+v", r)
	}

	// A PATH with bwrap but no docker CLI: a real machine without it.
	// (bwrap runs as the workspace's owner: the directory must be theirs to
	// search, which a test's temporary directory is not.)
	dir, err := os.MkdirTemp("", "agentbox-test-path-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Symlink(bwrap, filepath.Join(dir, "bwrap")))
	rows = run(dir)
	for _, name := range []string{"docker-exec", "docker-run"} {
		if r := rows[name]; !strings.Contains(r.Skipped, "docker CLI is not installed") {
			t.Errorf("%s row without a docker CLI: %+v", name, r)
		}
	}
	if r := rows["bwrap"]; r.Skipped != "" {
		t.Errorf("bwrap row did not run: %+v", r)
	}
}

// requireDebianTool returns the path of bin, installing Debian's package
// pkg first when it is missing (as root; tests fail, never skip, without
// their tools).
func requireDebianTool(t *testing.T, bin, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(bin); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is required (apt-get install %s)", bin, pkg)
	}
	install := func() ([]byte, error) {
		return exec.Command("apt-get", "install", "-y", "-q", pkg).CombinedOutput()
	}
	if _, err := install(); err != nil {
		if out, err := exec.Command("apt-get", "update", "-q").CombinedOutput(); err != nil {
			t.Fatalf("apt-get update: %v\n%s", err, out)
		}
		if out, err := install(); err != nil {
			t.Fatalf("apt-get install %s: %v\n%s", pkg, err, out)
		}
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("%s not found after installing %s: %v", bin, pkg, err)
	}
	return p
}

// TestBenchSandboxUsesFoundEngine runs `agentbox bench sandbox` where the
// docker CLI's own choice of engine (DOCKER_HOST) answers nothing and
// agentbox finds the engine through engine.host: every docker CLI row
// must use the engine agentbox found.
func TestBenchSandboxUsesFoundEngine(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker CLI is needed for the docker-exec row: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, "--state-dir", t.TempDir(), "bench", "sandbox", "--n", "2", "--sustained", "2", "--json")
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/agentbox-test.sock", "AGENTBOX_ENGINE_HOST="+cli.DaemonHost(), "DOCKER_CONTEXT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench sandbox: %v\n%s", err, errb.String())
	}
	var rows []struct {
		Name  string  `json:"name"`
		P50MS float64 `json:"p50_ms"`
		N     int     `json:"n"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("bench --json: %v in %q", err, out.String())
	}
	got := map[string]bool{}
	for _, r := range rows {
		if r.N != 2 || r.P50MS <= 0 {
			t.Errorf("row %+v: want n=2 and a positive p50", r)
		}
		got[r.Name] = true
	}
	for _, want := range []string{"agentbox-pool", "docker-exec", "docker-run"} {
		if !got[want] {
			t.Errorf("no %s row in %s", want, out.String())
		}
	}
}
