package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// SandboxRow is one line of `agentbox bench sandbox --json`.
type SandboxRow struct {
	Name  string  `json:"name"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	N     int     `json:"n"`
	// Pool row only: back-to-back throughput and containers left behind.
	SustainedPerS *float64 `json:"sustained_per_s,omitempty"`
	Leaked        *int     `json:"leaked,omitempty"`
	// Engine rows only: containers/s of the engine alone.
	PerS *float64 `json:"per_s,omitempty"`
	// Skipped says why a peer's row could not run on this machine ("" when
	// it ran; then the times are its own).
	Skipped string `json:"skipped,omitempty"`
}

// SandboxOptions are the knobs of [Sandbox].
type SandboxOptions struct {
	// N is the runs per latency row (docker run: at most 30).
	N int
	// Sustained is the back-to-back runs of the throughput figure.
	Sustained int
	// EngineN is the containers per engine-cycle row (0: Sustained).
	EngineN int
	// Image is the image of every row.
	Image string
	// Profile prints the per-phase times of the pool's containers and
	// the CPU used per container to the progress writer.
	Profile bool
	// CPUProfile, when set, is the file the executor's Go CPU profile of
	// the sustained run is written to.
	CPUProfile string
}

// Sandbox times `true` through agentbox's warm pool in a small temporary
// workspace (its first row, which must run), then, in the same run, its
// peers: the engine alone creating and removing containers (1 and 4 at a
// time), the pool under gVisor when the engine offers runsc, `docker exec`
// into a running container, `docker run --rm` and bwrap. A peer that cannot
// run is a row whose Skipped says why. Progress goes to progress.
func Sandbox(ctx context.Context, progress io.Writer, cfg config.Config, o SandboxOptions) ([]SandboxRow, error) {
	cli, info, err := engine.Connect(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ws, remove, err := tempDir("agentbox-bench-")
	if err != nil {
		return nil, err
	}
	defer remove()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		return nil, err
	}
	for _, p := range []string{filepath.Join(ws, "main.go"), ws} {
		if err := giveToOwner(p); err != nil {
			return nil, err
		}
	}
	cfg.Workspace = ws
	cfg.Sandbox.Image = o.Image
	cfg.Sandbox.PoolSize = max(cfg.Sandbox.PoolSize, 2)
	fmt.Fprintf(progress, "engine %s (%s), image %s, n=%d\n", info.Host, info.Version, o.Image, o.N)

	pool, err := benchPool(ctx, progress, &cfg, cli, o)
	if err != nil {
		return nil, err
	}
	rows := []SandboxRow{pool}
	// The engine alone, as the ceiling of the sustained figure.
	engineN := o.EngineN
	if engineN <= 0 {
		engineN = o.Sustained
	}
	for _, par := range []int{1, 4} {
		name := fmt.Sprintf("engine-cycle-x%d", par)
		rows = append(rows, peerRow(progress, name, func() (SandboxRow, error) {
			e0 := readCPU()
			lat, perS, err := engineCycles(ctx, cli, o.Image, engineN, par)
			if err != nil {
				return SandboxRow{}, err
			}
			if o.Profile {
				fmt.Fprintf(progress, "%s: %s\n", name, e0.perItem(readCPU(), engineN))
			}
			r := row(name, lat)
			r.PerS = &perS
			return r, nil
		}))
	}
	rows = append(rows, peerRow(progress, "agentbox-pool-runsc", func() (SandboxRow, error) {
		return runscPool(ctx, cli, cfg, o.N)
	}))
	rows = append(rows, dockerRows(ctx, progress, info.Host, o.Image, o.N)...)
	rows = append(rows, peerRow(progress, "bwrap", func() (SandboxRow, error) {
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			return SandboxRow{}, errors.New("bwrap is not installed (apt-get install bubblewrap)")
		}
		lat, err := timeN(o.N, nil, cmdRunnerAs(ctx, bwrapEnv, ownerCred(), bwrap, bwrapArgs(ws, "true")...))
		return row("bwrap", lat), err
	}))
	return rows, nil
}

// benchPool is the pool's row: latency of one command when a warm
// container is ready, then the sustained rate and the containers left.
func benchPool(ctx context.Context, progress io.Writer, cfg *config.Config, cli *client.Client, o SandboxOptions) (SandboxRow, error) {
	var phases *phaseLog
	var log *slog.Logger
	if o.Profile {
		phases = newPhaseLog()
		log = slog.New(phases)
	}
	r, err := openWarm(ctx, cfg, log)
	if err != nil {
		return SandboxRow{}, err
	}
	closed := false
	defer func() {
		if !closed {
			r.Close(context.WithoutCancel(ctx))
		}
	}()
	fmt.Fprintln(progress, "agentbox-pool ...")
	lat, err := timePool(ctx, r, o.N, cfg.Sandbox.PoolSize)
	if err != nil {
		return SandboxRow{}, fmt.Errorf("pool: %w", err)
	}
	pool := row("agentbox-pool", lat)
	fmt.Fprintln(progress, "agentbox-pool sustained ...")
	if phases != nil {
		phases.reset()
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return SandboxRow{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return SandboxRow{}, err
		}
	}
	cpu0 := readCPU()
	start := time.Now()
	for range o.Sustained {
		if _, err := r.Run(ctx, sandbox.Spec{Argv: []string{"true"}}); err != nil {
			if o.CPUProfile != "" {
				pprof.StopCPUProfile()
			}
			return SandboxRow{}, fmt.Errorf("sustained: %w", err)
		}
	}
	rate := float64(o.Sustained) / time.Since(start).Seconds()
	cpu1 := readCPU()
	if o.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	id := r.ID()
	closed = true
	if err := r.Close(context.WithoutCancel(ctx)); err != nil {
		return SandboxRow{}, err
	}
	left, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelExecutor+"="+id))})
	if err != nil {
		return SandboxRow{}, err
	}
	leaked := len(left)
	pool.SustainedPerS, pool.Leaked = &rate, &leaked
	if phases != nil {
		phases.print(progress, fmt.Sprintf("the pool's containers during the sustained run (%d runs)", o.Sustained))
		fmt.Fprintln(progress, cpu0.perItem(cpu1, o.Sustained))
	}
	return pool, nil
}

// runscPool is the pool's latency row under gVisor, when the engine
// offers runsc and the configuration does not use it already.
func runscPool(ctx context.Context, cli *client.Client, cfg config.Config, n int) (SandboxRow, error) {
	if cfg.Sandbox.Runtime == "runsc" {
		return SandboxRow{}, errors.New("the agentbox-pool row already runs under runsc")
	}
	rts, err := engine.Runtimes(ctx, cli)
	if err != nil {
		return SandboxRow{}, fmt.Errorf("listing the engine's runtimes: %w", err)
	}
	if !slices.Contains(rts, "runsc") {
		return SandboxRow{}, errors.New("the engine has no runsc runtime (AGENTBOX_SANDBOX_RUNTIME=runsc agentbox engine start registers it)")
	}
	cfg.Sandbox.Runtime = "runsc"
	r, err := openWarm(ctx, &cfg, nil)
	if err != nil {
		return SandboxRow{}, err
	}
	lat, err := timePool(ctx, r, n, cfg.Sandbox.PoolSize)
	r.Close(context.WithoutCancel(ctx))
	return row("agentbox-pool-runsc", lat), err
}

// dockerRows are the docker CLI's rows: `docker exec` into a running
// container and `docker run --rm`, both against the engine agentbox
// found, which may be the private one the CLI knows nothing of.
func dockerRows(ctx context.Context, progress io.Writer, host, image string, n int) []SandboxRow {
	dockerCLI, lookErr := exec.LookPath("docker")
	env := dockerEnv(os.Environ(), host)
	execRow := peerRow(progress, "docker-exec", func() (SandboxRow, error) {
		if lookErr != nil {
			return SandboxRow{}, errors.New("the docker CLI is not installed")
		}
		name := fmt.Sprintf("agentbox-bench-%d", os.Getpid())
		if err := cmdRunner(ctx, env, dockerCLI, "run", "-d", "--rm", "--name", name, "--network", "none", image, "sleep", "3600")(); err != nil {
			return SandboxRow{}, fmt.Errorf("docker run -d (the container to exec into): %w", err)
		}
		lat, err := timeN(n, nil, cmdRunner(ctx, env, dockerCLI, "exec", name, "true"))
		if rmErr := cmdRunner(context.WithoutCancel(ctx), env, dockerCLI, "rm", "-f", name)(); rmErr != nil {
			fmt.Fprintf(progress, "removing container %s: %v\n", name, rmErr)
		}
		return row("docker-exec", lat), err
	})
	runRow := peerRow(progress, "docker-run", func() (SandboxRow, error) {
		if lookErr != nil {
			return SandboxRow{}, errors.New("the docker CLI is not installed")
		}
		lat, err := timeN(min(n, 30), nil, cmdRunner(ctx, env, dockerCLI, "run", "--rm", "--network", "none", image, "true"))
		return row("docker-run", lat), err
	})
	return []SandboxRow{execRow, runRow}
}

// peerRow runs one peer's row; when it cannot run, the row says why
// (and so does progress) instead of ending the bench.
func peerRow(progress io.Writer, name string, run func() (SandboxRow, error)) SandboxRow {
	fmt.Fprintf(progress, "%s ...\n", name)
	r, err := run()
	if err != nil {
		fmt.Fprintf(progress, "%s: cannot run here: %v\n", name, err)
		return SandboxRow{Name: name, Skipped: err.Error()}
	}
	return r
}

// warmRunner is the subset of a pooled backend's Runner the benches use.
type warmRunner interface {
	sandbox.Runner
	WaitWarm(ctx context.Context, n int) error
	ID() string
}

// openWarm opens cfg's backend through the registry (logging to log, nil
// for none); the benches need its pool.
func openWarm(ctx context.Context, cfg *config.Config, log *slog.Logger) (warmRunner, error) {
	r, err := sandbox.Open(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	w, ok := r.(warmRunner)
	if !ok {
		r.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("sandbox backend %s has no warm pool to measure", sandbox.BackendName(cfg))
	}
	return w, nil
}

// engineCycles runs n containers of image running `true` through the
// engine alone, par at a time: create, start, wait, remove. It returns
// each cycle's latency and the containers per second of the whole run.
func engineCycles(ctx context.Context, cli *client.Client, image string, n, par int) ([]time.Duration, float64, error) {
	label := fmt.Sprintf("dev.agentbox.bench=%d", os.Getpid())
	cycle := func() (time.Duration, error) {
		t0 := time.Now()
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"}, NetworkDisabled: true,
			Labels: map[string]string{"dev.agentbox.bench": strconv.Itoa(os.Getpid())}},
			&container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"},
				SecurityOpt: []string{"no-new-privileges"}, LogConfig: container.LogConfig{Type: "none"}}, nil, nil, "")
		if err != nil {
			return 0, err
		}
		defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true})
		waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
		if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			return 0, err
		}
		select {
		case <-waitC:
		case err := <-errC:
			return 0, err
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				d, err := cycle()
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	perS := float64(len(lat)) / time.Since(start).Seconds()
	// Anything a failed cycle left behind.
	if left, err := cli.ContainerList(context.WithoutCancel(ctx), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))}); err == nil {
		for _, c := range left {
			cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true})
		}
	}
	return lat, perS, first
}

// timePool times `true` n times through r, each once a warm container
// of the pool (size pool) is ready.
func timePool(ctx context.Context, r warmRunner, n, pool int) ([]time.Duration, error) {
	return timeN(n, func() error {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return r.WaitWarm(wctx, pool)
	}, func() error {
		res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"true"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d", res.ExitCode)
		}
		return err
	})
}

// dockerEnv is environ for a docker CLI that must talk to host: any other
// engine choice (DOCKER_HOST, DOCKER_CONTEXT) is replaced.
func dockerEnv(environ []string, host string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "DOCKER_HOST=") || strings.HasPrefix(kv, "DOCKER_CONTEXT=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "DOCKER_HOST="+host)
}

// cmdRunner returns a function that runs name with args and env (nil:
// this process's), as this process's user.
func cmdRunner(ctx context.Context, env []string, name string, args ...string) func() error {
	return cmdRunnerAs(ctx, env, nil, name, args...)
}

// cmdRunnerAs is cmdRunner as the user of cred (nil: this process's).
func cmdRunnerAs(ctx context.Context, env []string, cred *syscall.Credential, name string, args ...string) func() error {
	return func() error {
		c := exec.CommandContext(ctx, name, args...)
		c.Env = env
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
}

// ownerCred is the credential peers run with: OwnerUID's when agentbox
// runs as root (as agentbox's own sandboxed commands do: the workspace is
// OwnerUID's and only its owner may enter it), else nil (this user).
func ownerCred() *syscall.Credential {
	if !asRoot() {
		return nil
	}
	return &syscall.Credential{Uid: OwnerUID, Gid: OwnerUID}
}

// bwrapEnv is the scrubbed environment of the bwrap row, as agentbox's
// sandboxed commands get one (HOME in the sandbox's own /tmp).
var bwrapEnv = []string{"PATH=" + sandbox.Path, "HOME=/tmp"}

// bwrapArgs is a comparable bwrap sandbox: host toolchain read-only, the
// workspace read-write, every namespace unshared.
func bwrapArgs(ws string, argv ...string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", t, d)
			}
		default:
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--bind", ws, ws, "--chdir", ws)
	return append(args, argv...)
}

func row(name string, d []time.Duration) SandboxRow {
	return SandboxRow{Name: name, P50MS: pct(d, 50), P95MS: pct(d, 95), N: len(d)}
}

// WriteSandboxReport prints the rows of [Sandbox] for a person: each row
// with its ratio to the pool's p50, then the sustained rate against the
// engine alone and the targets. sustained is the back-to-back runs.
func WriteSandboxReport(w io.Writer, rows []SandboxRow, sustained int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tn\tp50 ms\tp95 ms\tp50 / pool p50\t")
	pool := rows[0]
	byName := map[string]SandboxRow{}
	var skipped []SandboxRow
	for _, r := range rows {
		if r.Skipped != "" {
			skipped = append(skipped, r)
			continue
		}
		byName[r.Name] = r
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.1fx\t\n", r.Name, r.N, r.P50MS, r.P95MS, r.P50MS/pool.P50MS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range skipped {
		fmt.Fprintf(w, "%s: not run: %s\n", r.Name, r.Skipped)
	}
	fmt.Fprintf(w, "\nsustained: %.1f throwaway containers/s over %d back-to-back runs; containers left after Close: %d\n", *pool.SustainedPerS, sustained, *pool.Leaked)
	fmt.Fprintf(w, "target pool p50 <= 10 ms: %s (%.2f ms)\n", verdict(pool.P50MS <= 10), pool.P50MS)
	if r, ok := byName["docker-exec"]; ok {
		fmt.Fprintf(w, "target pool >= 6x faster than docker exec: %s (%.1fx)\n", verdict(r.P50MS >= 6*pool.P50MS), r.P50MS/pool.P50MS)
		if g, ok := byName["agentbox-pool-runsc"]; ok {
			fmt.Fprintf(w, "gVisor pool: p50 %.2f ms, %.2fx docker exec (runc) p50\n", g.P50MS, g.P50MS/r.P50MS)
		}
	}
	for _, name := range []string{"engine-cycle-x1", "engine-cycle-x4"} {
		if r, ok := byName[name]; ok && r.PerS != nil {
			fmt.Fprintf(w, "%s: the engine alone, %.1f containers/s; the pool's sustained rate is %.2fx that\n", name, *r.PerS, *pool.SustainedPerS / *r.PerS)
		}
	}
	_, err := fmt.Fprintf(w, "target >= 20 containers/s with no leak: %s\n", verdict(*pool.SustainedPerS >= 20 && *pool.Leaked == 0))
	return err
}

// verdict is how a report says whether a target was met.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
