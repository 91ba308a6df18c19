package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/workspace"
)

// ToolchainRow is one line of `agentbox bench toolchains --json`.
type ToolchainRow struct {
	Name string `json:"name"`
	// Cold is the first run of each side (empty build caches).
	NativeColdMS  float64 `json:"native_cold_ms"`
	SandboxColdMS float64 `json:"sandbox_cold_ms"`
	ColdRatio     float64 `json:"cold_ratio"`
	// Warm is the median of N later runs.
	NativeWarmMS  float64 `json:"native_warm_p50_ms"`
	SandboxWarmMS float64 `json:"sandbox_warm_p50_ms"`
	WarmRatio     float64 `json:"warm_ratio"`
	Target        string  `json:"target"`
	N             int     `json:"n"`
}

// WriteToolchainsReport prints the rows of [Toolchains] for a person.
func WriteToolchainsReport(w io.Writer, rows []ToolchainRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tnative cold\tsandbox cold\tcold ratio\tnative warm p50\tsandbox warm p50\twarm ratio\ttarget\tn")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0fms\t%.0fms\t%.2fx\t%.0fms\t%.0fms\t%.2fx\t%s\t%d\n", r.Name, r.NativeColdMS, r.SandboxColdMS, r.ColdRatio,
			r.NativeWarmMS, r.SandboxWarmMS, r.WarmRatio, r.Target, r.N)
	}
	return tw.Flush()
}

// busyLoops is the parallel CPU-bound job: two shell loops at once.
const busyLoops = `for j in 1 2; do ( i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done ) & done; wait`

// Toolchains copies a Go module (src; "": the module in the current
// directory, which must be agentbox's: it needs classifier/) to a
// temporary workspace and times, natively and through the whole tool
// pipeline (Bash tool, permission, snapshot, cfg's warm sandbox pool,
// change capture, journal), go vet ./classifier/, go test -count=1
// ./classifier/ and two busy loops in parallel: the first run of each side
// cold (empty build caches), then the median of n warm runs, the sides
// alternating. Dependencies come from the host's module cache, read-only;
// the network is off on both sides (GOPROXY=off).
func Toolchains(ctx context.Context, progress io.Writer, cfg config.Config, src string, n int) ([]ToolchainRow, error) {
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		src = wd
	}
	if _, err := os.Stat(filepath.Join(src, "classifier")); err != nil {
		return nil, fmt.Errorf("%s has no classifier/ package: run from agentbox's source or pass --src", src)
	}
	goEnv := func(k string) (string, error) {
		out, err := exec.CommandContext(ctx, "go", "env", k).Output()
		return strings.TrimSpace(string(out)), err
	}
	modcache, err := goEnv("GOMODCACHE")
	if err != nil || modcache == "" {
		return nil, fmt.Errorf("go env GOMODCACHE: %v", err)
	}
	tmp, err := os.MkdirTemp("", "agentbox-bench-toolchains-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	fmt.Fprintf(progress, "copying %s ...\n", src)
	if err := copyModule(src, ws); err != nil {
		return nil, err
	}
	// The module's dependencies must be in the host's module cache.
	dl := exec.CommandContext(ctx, "go", "mod", "download")
	dl.Dir = ws
	if out, err := dl.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go mod download: %v\n%s", err, out)
	}
	if err := giveTreeToOwner(ws); err != nil {
		return nil, err
	}
	cfg.Workspace, cfg.StateDir = ws, filepath.Join(tmp, "state")
	cfg.Tools.Mode = "bypassPermissions"
	// The host's module cache is the bench user's only when agentbox runs
	// as its owner; name it so that it is mounted either way.
	cfg.Sandbox.Caches = append(append([]string(nil), cfg.Sandbox.Caches...), modcache)
	if cfg.Sandbox.BuildCacheMaxMB == 0 {
		cfg.Sandbox.BuildCacheMaxMB = 4096
	}

	nativeCache := filepath.Join(tmp, "native-gocache")
	native := func(script string) error {
		c := exec.CommandContext(ctx, "bash", "-c", script)
		c.Dir = ws
		c.Env = append(os.Environ(), "GOCACHE="+nativeCache, "GOPROXY=off", "GOMODCACHE="+modcache, "GOFLAGS=-buildvcs=false")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("native %s: %v\n%s", script, err, out)
		}
		return nil
	}

	sys, err := workspace.Open(ctx, &cfg, workspace.Options{Register: builtin.Register, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	sess := tools.NewSession("bench", ws)
	sandboxed := func(script string) error {
		raw, _ := json.Marshal(map[string]any{"command": script, "timeout": 600000})
		r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: "Bash", Input: raw})
		if r.Err != nil {
			return fmt.Errorf("sandboxed %s: %s: %s\n%s", script, r.Err.Kind, r.Err.Message, r.Content)
		}
		if r.Display != "exit 0" {
			return fmt.Errorf("sandboxed %s: %s\n%s", script, r.Display, r.Content)
		}
		return nil
	}
	// The first call starts the pool; it is not part of any row.
	fmt.Fprintln(progress, "warming the pool ...")
	if err := sandboxed("true"); err != nil {
		return nil, err
	}
	pace := func() error { time.Sleep(300 * time.Millisecond); return nil }
	jobs := []struct{ name, script string }{
		{"go-vet-classifier", "go vet ./classifier/"},
		{"go-test-classifier", "go test -count=1 ./classifier/"},
		{"parallel-busy-loops-x2", busyLoops},
	}
	var rows []ToolchainRow
	for _, j := range jobs {
		fmt.Fprintf(progress, "%s ...\n", j.name)
		row := ToolchainRow{Name: j.name, Target: "warm <= 1.15x", N: n}
		cold := func(f func(string) error) (float64, error) {
			pace()
			t0 := time.Now()
			err := f(j.script)
			return float64(time.Since(t0)) / float64(time.Millisecond), err
		}
		if row.NativeColdMS, err = cold(native); err != nil {
			return nil, err
		}
		if row.SandboxColdMS, err = cold(sandboxed); err != nil {
			return nil, err
		}
		// Alternate the sides so that noise on this shared machine hits both.
		var nat, box []time.Duration
		for range n {
			d, err := timeN(1, pace, func() error { return native(j.script) })
			if err != nil {
				return nil, err
			}
			nat = append(nat, d...)
			if d, err = timeN(1, pace, func() error { return sandboxed(j.script) }); err != nil {
				return nil, err
			}
			box = append(box, d...)
		}
		row.NativeWarmMS, row.SandboxWarmMS = lowerPct(nat, 50), lowerPct(box, 50)
		row.ColdRatio = row.SandboxColdMS / max(row.NativeColdMS, 0.001)
		row.WarmRatio = row.SandboxWarmMS / max(row.NativeWarmMS, 0.001)
		rows = append(rows, row)
	}
	return rows, nil
}

// copyModule copies the regular files of a source tree (no .git, bin or
// node_modules) to dst.
func copyModule(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "node_modules", ".agentbox":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
