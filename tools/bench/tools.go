package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/permission"
	"github.com/agentbox/agentbox/tools/workspace"
)

// ToolRow is one line of `agentbox bench tools --json`.
type ToolRow struct {
	Name   string  `json:"name"`
	Ours   float64 `json:"ours_p50_ms"`
	Peer   string  `json:"peer,omitempty"`
	PeerMS float64 `json:"peer_p50_ms,omitempty"`
	// Ratio is ours/peer (lower is better); Target the ratio or time aimed at.
	Ratio  float64 `json:"ratio,omitempty"`
	Target string  `json:"target,omitempty"`
	P95    float64 `json:"ours_p95_ms"`
	// HostMS is the p50 of the time a pipeline call spent outside the
	// sandbox runner (snapshot, journal, audit, stages).
	HostMS float64 `json:"host_side_p50_ms,omitempty"`
	N      int     `json:"n"`
	Note   string  `json:"note,omitempty"`
}

// ToolsOptions are the knobs of [Tools].
type ToolsOptions struct {
	// N is the runs per row.
	N int
	// Src is the tree to search ("": the Go source tree, $(go env GOROOT)/src).
	Src string
	// NoSearch skips the Grep, Glob and Read batch rows; NoSandbox the
	// rows that need the engine (Write, Edit, Bash through the pool).
	NoSearch, NoSandbox bool
	// CPUProfile, when set, is the file the executor's Go CPU profile of
	// the timed Write/Edit rounds is written to.
	CPUProfile string
}

// Tools measures the built-in tools against their peers in one run:
// Grep and Glob over Src against rg (no peer when rg is missing), a batch
// of 10 Reads in parallel against the same batch serially, and, unless
// NoSandbox, Bash true, Read, Write and Edit through the whole pipeline and
// the warm pool of cfg's sandbox (cfg may be nil with NoSandbox).
func Tools(ctx context.Context, progress io.Writer, cfg *config.Config, o ToolsOptions) ([]ToolRow, error) {
	src := o.Src
	if src == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return nil, fmt.Errorf("finding the Go source tree (go env GOROOT): %w; pass --src", err)
		}
		src = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return nil, fmt.Errorf("source tree: %w", err)
	}
	var rows []ToolRow
	if !o.NoSearch {
		if rows, err = benchSearch(ctx, progress, src, o.N); err != nil {
			return nil, err
		}
	}
	if o.NoSandbox {
		fmt.Fprintln(progress, "--no-sandbox: no Write/Edit rows")
		return rows, nil
	}
	wrows, err := benchWrites(ctx, progress, *cfg, o.N, o.CPUProfile)
	if err != nil {
		return nil, fmt.Errorf("write/edit through the pool: %w", err)
	}
	return append(rows, wrows...), nil
}

// WriteToolsReport prints the rows of [Tools] for a person.
func WriteToolsReport(w io.Writer, rows []ToolRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tours p50\tours p95\tpeer\tpeer p50\tratio\ttarget\tn\tnote")
	for _, r := range rows {
		peer, peerMS, ratio := "-", "-", "-"
		if r.Peer != "" {
			peer, peerMS, ratio = r.Peer, fmt.Sprintf("%.1fms", r.PeerMS), fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%.1fms\t%.1fms\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Name, r.Ours, r.P95, peer, peerMS, ratio, r.Target, r.N, r.Note)
	}
	return tw.Flush()
}

// benchSearch times Grep, Glob and Read batches over src.
func benchSearch(ctx context.Context, progress io.Writer, src string, n int) ([]ToolRow, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	p := tools.NewPipeline(reg, tools.Options{
		Workspace: src, Root: root, Mode: permission.ModeBypass,
		Limits: tools.Limits{MaxOutputBytes: 1 << 30},
	})
	call := func(tool string, input map[string]any) (tools.Response, error) {
		raw, _ := json.Marshal(input)
		r := p.Run(ctx, tools.Request{Session: tools.NewSession("bench", src), Tool: tool, Input: raw})
		if r.Err != nil {
			return r, fmt.Errorf("%s %s: %s: %s", tool, raw, r.Err.Kind, r.Err.Message)
		}
		return r, nil
	}
	rg, rgErr := exec.LookPath("rg")
	if rgErr != nil {
		fmt.Fprintln(progress, "rg is not installed (apt-get install ripgrep): search rows have no peer")
	}
	type search struct {
		name   string
		tool   string
		input  map[string]any
		rgArgs []string
	}
	searches := []search{
		{"grep-literal", "Grep", map[string]any{"pattern": "func main", "path": src}, []string{"-l", "--hidden", "func main", src}},
		{"grep-regex-content", "Grep", map[string]any{"pattern": `func \(\w+ \*\w+\) Close\(`, "output_mode": "content", "path": src}, []string{"-n", "--hidden", `func \(\w+ \*\w+\) Close\(`, src}},
		{"grep-ignore-case-count", "Grep", map[string]any{"pattern": "errnotexist", "-i": true, "output_mode": "count", "path": src}, []string{"-c", "-i", "--hidden", "errnotexist", src}},
		{"glob-**/*.go", "Glob", map[string]any{"pattern": "**/*.go", "path": src}, []string{"--files", "--hidden", "-g", "*.go", src}},
	}
	var rows []ToolRow
	for _, s := range searches {
		fmt.Fprintf(progress, "%s ...\n", s.name)
		// One warm-up of each, so both read from the page cache.
		if _, err := call(s.tool, s.input); err != nil {
			return nil, err
		}
		ours, err := timeN(n, nil, func() error { _, err := call(s.tool, s.input); return err })
		if err != nil {
			return nil, err
		}
		row := ToolRow{Name: s.name, Ours: lowerPct(ours, 50), P95: lowerPct(ours, 95), N: n, Target: "<= 2x rg"}
		if rgErr == nil {
			peer := func() error {
				c := exec.CommandContext(ctx, rg, s.rgArgs...)
				c.Stdout = io.Discard
				if err := c.Run(); err != nil {
					if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
						return nil // no match
					}
					return fmt.Errorf("rg %s: %w", strings.Join(s.rgArgs, " "), err)
				}
				return nil
			}
			peer()
			theirs, err := timeN(n, nil, peer)
			if err != nil {
				return nil, err
			}
			row.Peer, row.PeerMS = "rg", lowerPct(theirs, 50)
			row.Ratio = row.Ours / row.PeerMS
		}
		rows = append(rows, row)
	}

	// A batch of 10 Reads, parallel (RunBatch) against serial.
	fmt.Fprintln(progress, "read-batch-10 ...")
	var files []string
	for _, f := range []string{"fmt/print.go", "fmt/scan.go", "os/file.go", "os/exec/exec.go", "net/http/server.go",
		"strings/strings.go", "bytes/bytes.go", "sort/sort.go", "io/io.go", "bufio/bufio.go"} {
		files = append(files, filepath.Join(src, f))
	}
	batch := func() []tools.Request {
		sess := tools.NewSession("bench", src) // fresh: no "unchanged" stubs
		reqs := make([]tools.Request, len(files))
		for i, f := range files {
			raw, _ := json.Marshal(map[string]any{"file_path": f})
			reqs[i] = tools.Request{Session: sess, Tool: "Read", Input: raw}
		}
		return reqs
	}
	check := func(rs []tools.Response) error {
		for _, r := range rs {
			if r.Err != nil {
				return fmt.Errorf("read: %s: %s", r.Err.Kind, r.Err.Message)
			}
		}
		return nil
	}
	par, err := timeN(n, nil, func() error { return check(p.RunBatch(ctx, batch())) })
	if err != nil {
		return nil, err
	}
	ser, err := timeN(n, nil, func() error {
		var out []tools.Response
		for _, r := range batch() {
			out = append(out, p.Run(ctx, r))
		}
		return check(out)
	})
	if err != nil {
		return nil, err
	}
	row := ToolRow{Name: "read-batch-10-parallel", Ours: lowerPct(par, 50), P95: lowerPct(par, 95), N: n,
		Peer: "serial", PeerMS: lowerPct(ser, 50), Target: "< 1x", Note: fmt.Sprintf("%d cores", runtime.GOMAXPROCS(0))}
	row.Ratio = row.Ours / row.PeerMS
	rows = append(rows, row)
	return rows, nil
}

// benchWrites times, in one run and interleaved (so that a busy machine
// slows every row alike), through the whole pipeline (snapshot, sandbox,
// change capture, journal, audit) over one warm pool in a temporary
// workspace: Bash `true` (the floor of anything run in a container),
// Read (host-side), Write and Edit (the file handed to a container's
// init). Below the pipeline, the runner alone: Run(true) against
// WriteFile. A host-side atomic write is the last reference.
func benchWrites(ctx context.Context, progress io.Writer, cfg config.Config, n int, cpuProfile string) ([]ToolRow, error) {
	ws, removeWS, err := tempDir("agentbox-bench-tools-")
	if err != nil {
		return nil, err
	}
	defer removeWS()
	state, removeState, err := tempDir("agentbox-bench-state-")
	if err != nil {
		return nil, err
	}
	defer removeState()
	if err := giveToOwner(ws); err != nil {
		return nil, err
	}
	cfg.Workspace, cfg.StateDir = ws, state
	cfg.Tools.Mode = "acceptEdits"

	runner, err := openWarm(ctx, &cfg, nil)
	if err != nil {
		return nil, err
	}
	defer runner.Close(context.WithoutCancel(ctx))
	timed := &timedRunner{Runner: runner}
	sys, err := workspace.Open(ctx, &cfg, workspace.Options{Register: builtin.Register, Runner: timed,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := runner.WaitWarm(wctx, max(cfg.Sandbox.PoolSize, 1)); err != nil {
		return nil, err
	}

	sess := tools.NewSession("bench", ws)
	call := func(tool string, input map[string]any) error {
		raw, _ := json.Marshal(input)
		r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: raw})
		if r.Err != nil {
			return fmt.Errorf("%s: %s: %s", tool, r.Err.Kind, r.Err.Message)
		}
		return nil
	}
	file := filepath.Join(ws, "bench.txt")
	direct := filepath.Join(ws, "direct.txt")
	body := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100)
	text := func(i int) string { return fmt.Sprintf("marker %d\n%s", i, body) }
	i, m := 0, 0 // m: the marker now in file
	type row struct {
		name string
		f    func() error
		ds   []time.Duration
		host []time.Duration // outside the sandbox runner (pipeline calls only)
	}
	rows := []*row{
		{name: "bash-true", f: func() error { return call("Bash", map[string]any{"command": "true"}) }},
		{name: "read", f: func() error {
			// A fresh session: a full read each time, not an "unchanged" stub.
			raw, _ := json.Marshal(map[string]any{"file_path": file})
			r := sys.Pipeline.Run(ctx, tools.Request{Session: tools.NewSession("bench-read", ws), Tool: "Read", Input: raw})
			if r.Err != nil {
				return fmt.Errorf("read: %s: %s", r.Err.Kind, r.Err.Message)
			}
			return nil
		}},
		{name: "write-through-pool", f: func() error {
			m++
			return call("Write", map[string]any{"file_path": file, "content": text(m)})
		}},
		{name: "edit-through-pool", f: func() error {
			m++
			return call("Edit", map[string]any{"file_path": file, "old_string": fmt.Sprintf("marker %d\n", m-1), "new_string": fmt.Sprintf("marker %d\n", m)})
		}},
		{name: "runner-true", f: func() error {
			res, err := runner.Run(ctx, sandbox.Spec{Argv: []string{"true"}})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("true exited %d", res.ExitCode)
			}
			return err
		}},
		{name: "runner-writefile", f: func() error {
			i++
			return runner.WriteFile(ctx, sandbox.FileWrite{Path: direct, Content: []byte(text(i)), Mode: 0o644})
		}},
		{name: "host-write", f: func() error {
			i++
			tmp := direct + ".tmp"
			if err := os.WriteFile(tmp, []byte(text(i)), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, direct)
		}},
	}
	if err := call("Write", map[string]any{"file_path": file, "content": text(0)}); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "write/edit: warming up ...")
	for range 2 {
		for _, r := range rows {
			if err := r.f(); err != nil {
				return nil, err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(progress, "write/edit: %d rounds of %d calls ...\n", n, len(rows))
	for range n {
		for _, r := range rows {
			// Pace the calls as an agent does, so that the pools refill.
			time.Sleep(250 * time.Millisecond)
			timed.took.Store(0)
			t0 := time.Now()
			if err := r.f(); err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
			d := time.Since(t0)
			r.ds = append(r.ds, d)
			if in := time.Duration(timed.took.Load()); in > 0 {
				r.host = append(r.host, d-in)
			}
		}
	}
	p50 := map[string]float64{}
	for _, r := range rows {
		p50[r.name] = lowerPct(r.ds, 50)
	}
	var out []ToolRow
	for _, r := range rows {
		row := ToolRow{Name: r.name, Ours: p50[r.name], P95: lowerPct(r.ds, 95), N: n}
		peer := ""
		switch r.name {
		case "read":
			peer = "bash-true"
		case "write-through-pool", "edit-through-pool":
			peer, row.Target = "bash-true", "<= 1.0x and <= 8ms"
			row.Note = fmt.Sprintf("%.2fx the 8ms target", row.Ours/8)
		case "runner-writefile":
			peer, row.Target = "runner-true", "<= 1.0x"
		case "bash-true":
			row.Note = "floor of anything run in a container"
		}
		if peer != "" {
			row.Peer, row.PeerMS = peer, p50[peer]
			row.Ratio = row.Ours / max(p50[peer], 0.001)
		}
		if len(r.host) > 0 {
			row.HostMS = lowerPct(r.host, 50)
			row.Note = strings.TrimPrefix(row.Note+fmt.Sprintf("; %.1fms outside the container", row.HostMS), "; ")
		}
		out = append(out, row)
	}
	return out, nil
}

// timedRunner is the sandbox runner of the pipeline rows, noting how long
// the last Run or WriteFile took: the rest of a call is host-side.
type timedRunner struct {
	sandbox.Runner
	took atomic.Int64
}

func (t *timedRunner) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	t0 := time.Now()
	res, err := t.Runner.Run(ctx, spec)
	t.took.Add(int64(time.Since(t0)))
	return res, err
}

func (t *timedRunner) WriteFile(ctx context.Context, w sandbox.FileWrite) error {
	t0 := time.Now()
	err := t.Runner.WriteFile(ctx, w)
	t.took.Add(int64(time.Since(t0)))
	return err
}
