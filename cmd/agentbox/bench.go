package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/tools/bench"
)

func init() { register(newBenchCmd) }

// The `agentbox bench` commands: flags, the engine and the output format
// here; the measurements are package bench's.
func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentbox against its peers on this machine",
	}
	cmd.AddCommand(newBenchSandboxCmd(a), newBenchToolsCmd(a), newBenchToolchainsCmd(a), newBenchLoadCmd(a), newBenchSnapshotCmd(a), newBenchEgressCmd(a))
	return cmd
}

func newBenchSandboxCmd(a *app) *cobra.Command {
	var o bench.SandboxOptions
	cmd := &cobra.Command{
		Use:   "sandbox [--n N] [--json]",
		Short: "Time `true` through the warm pool against docker exec, docker run and bwrap",
		Long: `sandbox runs ` + "`true`" + ` N times through agentbox's warm pool (latency of one
command when a warm container is ready), then back to back N times
(sustained throwaway containers per second, and containers leaked after
Close), the same pool under gVisor when the engine offers runsc
(agentbox-pool-runsc), and in the same run through ` + "`docker exec`" + ` into a long-running
container, ` + "`docker run --rm`" + ` and bwrap (when installed), all with the
same image and a small temporary workspace. It prints p50/p95 per row and
each row's ratio to the pool.

The engine rows (engine-cycle-x1, engine-cycle-x4) are the ceiling the
sustained figure is bounded by: the engine alone creating, starting,
waiting for and removing containers of the same image running ` + "`true`" + `
(no agentbox work: no pins, no init, no hand-over), one at a time and 4
at a time. --profile prints the time of every phase of the pool's
containers (bind sources and pins, create, attach, start, init's Ready,
remove) and the CPU used per container; --cpuprofile writes the
executor's Go CPU profile of the sustained run.

A peer that cannot run here (not installed, no runsc runtime, a sandbox
that cannot enter the workspace) is a row that says why; the other rows
still run. Run as root, bwrap runs as the workspace's owner, as agentbox's
sandboxed commands do.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			rows, err := bench.Sandbox(cmd.Context(), a.stderr(), *cfg, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rows)
			}
			return bench.WriteSandboxReport(a.stdout(), rows, o.Sustained)
		},
	}
	cmd.Flags().IntVar(&o.N, "n", 100, "runs per row (docker run: at most 30)")
	cmd.Flags().IntVar(&o.Sustained, "sustained", 50, "back-to-back runs for the throughput figure")
	cmd.Flags().StringVar(&o.Image, "image", images.Minimal, "image for every row")
	cmd.Flags().IntVar(&o.EngineN, "engine-n", 0, "containers per engine-cycle row (default: --sustained)")
	cmd.Flags().BoolVar(&o.Profile, "profile", false, "print per-phase times of the pool's containers and CPU per container")
	cmd.Flags().StringVar(&o.CPUProfile, "cpuprofile", "", "write the executor's CPU profile of the sustained run to `FILE`")
	return cmd
}

func newBenchToolsCmd(a *app) *cobra.Command {
	var o bench.ToolsOptions
	cmd := &cobra.Command{
		Use:   "tools [--n N] [--src DIR] [--no-sandbox] [--no-search] [--json]",
		Short: "Time Grep, Glob, Read batches and Write/Edit through the pool against their peers",
		Long: `tools measures the built-in tools in one run against their peers:
Grep (three patterns) and Glob over the Go source tree ($(go env GOROOT)/src,
or --src) against rg; a batch of 10 Reads run in parallel against the same
batch run serially; and, interleaved in one run, Bash true, Read, Write
and Edit through the whole pipeline and the warm sandbox pool (Write and
Edit p50 target: at most Bash true and 8 ms), the runner's WriteFile
against its Run(true), and a plain host-side write.
Each row prints p50/p95 of N runs and the ratio to its peer; a pipeline
row's note also gives the p50 of its time spent outside the container
(stages, snapshot, journal, audit). --cpuprofile writes the executor's
Go CPU profile of the timed Write/Edit rounds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg *config.Config
			if !o.NoSandbox {
				c, err := a.Config()
				if err != nil {
					return err
				}
				cfg = c
			}
			rows, err := bench.Tools(cmd.Context(), a.stderr(), cfg, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rows)
			}
			return bench.WriteToolsReport(a.stdout(), rows)
		},
	}
	cmd.Flags().IntVar(&o.N, "n", 10, "runs per row")
	cmd.Flags().StringVar(&o.Src, "src", "", "tree to search (default: the Go source tree)")
	cmd.Flags().BoolVar(&o.NoSandbox, "no-sandbox", false, "skip the Write/Edit rows (they need the engine)")
	cmd.Flags().StringVar(&o.CPUProfile, "cpuprofile", "", "write the executor's CPU profile of the timed Write/Edit rounds to `FILE`")
	cmd.Flags().BoolVar(&o.NoSearch, "no-search", false, "skip the Grep/Glob/Read rows")
	return cmd
}

func newBenchToolchainsCmd(a *app) *cobra.Command {
	var n int
	var src string
	cmd := &cobra.Command{
		Use:   "toolchains [--n N] [--src DIR] [--json]",
		Short: "Time agentbox's own go vet / go test and a parallel CPU job through the Bash tool against native runs",
		Long: `toolchains copies a Go module (agentbox's own source: --src, default the
module in the current directory) to a temporary workspace and times, natively
and through the whole tool pipeline (Bash tool, permission, snapshot, warm
sandbox pool, change capture, journal), in the same run:
  go vet ./classifier/
  go test -count=1 ./classifier/
  two busy loops in parallel (CPU limit)
The first run of each side is cold (empty build caches: the native side gets a
fresh GOCACHE, the sandbox a cleared build cache); the warm rows are the
median of N later runs. Dependencies come from the host's module cache,
mounted read-only; the network is off on both sides (GOPROXY=off).
Target: warm ratio <= 1.15x.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			rows, err := bench.Toolchains(cmd.Context(), a.stderr(), *cfg, src, n)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rows)
			}
			return bench.WriteToolchainsReport(a.stdout(), rows)
		},
	}
	cmd.Flags().IntVar(&n, "n", 3, "warm runs per row and side")
	cmd.Flags().StringVar(&src, "src", "", "Go module to copy (default: the module in the current directory)")
	return cmd
}

func newBenchEgressCmd(a *app) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "egress [--n N] [--json]",
		Short: "Time HTTPS downloads through a sandbox's egress proxy against the same curl on the host",
		Long: `egress serves a 32 MiB file and a small one over HTTPS (a self-signed
certificate for 127.0.0.1) on host loopback and fetches them with curl, each
fetch on a new connection, on the host and in a sandbox of the host image
(network.mode: allowlist, network.allow: [127.0.0.1]: through agentbox init's
relay and the egress proxy), alternating host and sandbox rounds in the same
run, each step started once the warm pool is full (a container starting
meanwhile would slow the step). Rows: bulk throughput, median of 3N downloads
per side (target: sandbox >= 0.8x host), with the host's curl through a bare
relay in this process (the kernel splicing TCP to TCP, no checks: the floor
any proxy starts from on this machine); and the p50 of 10N small requests
per side (target: <= 2 ms added per new connection).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			rows, err := bench.Egress(cmd.Context(), a.stderr(), *cfg, n)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rows)
			}
			return bench.WriteEgressReport(a.stdout(), rows)
		},
	}
	cmd.Flags().IntVar(&n, "n", 5, "rounds (each: 3 downloads and 10 small requests per side)")
	return cmd
}

func newBenchLoadCmd(a *app) *cobra.Command {
	var o bench.LoadOptions
	var slowS float64
	var noSerial, serialOnly bool
	cmd := &cobra.Command{
		Use:   "load [--sessions N] [--calls N] [--slow SECONDS] [--no-serial | --serial-only] [--json]",
		Short: "Drive a real `agentbox mcp --http` with concurrent MCP sessions of mixed calls",
		Long: `load starts ` + "`agentbox mcp --http`" + ` (this binary) on a temporary workspace owned
by an unprivileged uid and drives it with --sessions MCP clients (the
official Go SDK over streamable HTTP) of --calls mixed calls each: Read,
Grep, Glob, Write, Edit, read-only Bash and mutating Bash; one session in
four also runs a shell of --slow seconds (` + "`sleep N; echo ... > slow-I.txt`" + `) once
every 10 calls. It reports p50/p95/max per kind of call, sustained calls/s,
containers the engine created per second (its create events for the
workspace), containers of the workspace left after the server stopped
(leaked, must be 0), and whether the journal and the audit log are
complete: read back after the run, every call has its audit record and
every successful mutating call its journal entry holding its change.

The same load then runs again with the old serial behaviour forced
(snapshot.serial_calls: true, through AGENTBOX_SNAPSHOT_SERIAL_CALLS): a
whole-workspace shell call holds the snapshot store's lock for its whole
run. The report prints serial/concurrent ratios of Write and Edit p50/p95
and the targets of the concurrent run: Write and Edit p50 <= 50 ms and
p95 <= 500 ms. When this build has no snapshot.serial_calls key the
serial run is skipped with the reason.

The server gets its own configuration (acceptEdits, echo and sleep
allowed) and state dir; the rest comes from the environment (AGENTBOX_*),
not from --config. It exits 1 when a call failed, a container leaked or
the journal or audit log is incomplete (targets are reported, not
enforced).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Sessions < 1 || o.Calls < 1 {
				return fmt.Errorf("--sessions and --calls must be at least 1")
			}
			if noSerial && serialOnly {
				return fmt.Errorf("--no-serial and --serial-only exclude each other")
			}
			o.Slow = time.Duration(slowS * float64(time.Second))
			o.Concurrent, o.Serial = !serialOnly, !noSerial
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := a.ensureEngine(ctx, cfg); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this agentbox binary: %w", err)
			}
			rep, err := bench.Load(ctx, a.stderr(), cfg, exe, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				err = writeJSON(a.stdout(), rep)
			} else {
				err = bench.WriteLoadReport(a.stdout(), rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Sessions, "sessions", 8, "concurrent MCP sessions")
	cmd.Flags().IntVar(&o.Calls, "calls", 100, "calls per session")
	cmd.Flags().Float64Var(&slowS, "slow", 3, "seconds of the slow shell command (0: none)")
	cmd.Flags().BoolVar(&noSerial, "no-serial", false, "skip the run with snapshot.serial_calls: true")
	cmd.Flags().BoolVar(&serialOnly, "serial-only", false, "run only with snapshot.serial_calls: true")
	return cmd
}

func newBenchSnapshotCmd(a *app) *cobra.Command {
	var o bench.SnapshotOptions
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Snapshot store against a shadow git repository on a copy of the Go source tree",
		Long: `Copies a source tree (default: $(go env GOROOT)/src) twice and measures, in
the same run, agentbox's snapshot store against a shadow git repository
(GIT_DIR outside the tree): first snapshot (checkpoint vs git add -A &&
git commit), no-change snapshot, one-file-change snapshot, a whole
journaled call (scan before and after), whole-tree restore after deleting
everything (rollback vs git checkout -- .; and the floor under both: the
same tree copied from the source by plain create and write, no modes,
times, owners or verification), a file-scoped call (a Write:
pre-image, write, post-image, manifest update; vs git add of that file
and git commit), and store size against the tree size. Times are
medians; ratios are ours / git.

Then change capture: a journaled call that appends to one file, on a copy
of the tree and on a generated tree of --big files, with the fanotify
watcher (snapshot.change_capture auto; needs root) against full scans, in
the same run: the time in the two scans (target 10 ms) and the whole
Begin+Finish (which also saves the manifest and commits the entry).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.Snapshot(cmd.Context(), a.stderr(), o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), rep)
			}
			return bench.WriteSnapshotReport(a.stdout(), rep)
		},
	}
	cmd.Flags().StringVar(&o.Src, "src", "", "tree to copy (default: $(go env GOROOT)/src)")
	cmd.Flags().IntVar(&o.N, "n", 5, "repetitions of the repeated measurements")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the temporary copies")
	cmd.Flags().IntVar(&o.Big, "big", 200000, "files in the generated tree of the change-capture rows (0: skip it)")
	return cmd
}
