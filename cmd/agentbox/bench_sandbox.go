package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/engine"
)

func init() { registerBench(newBenchSandboxCmd) }

// benchRow is one line of `agentbox bench sandbox --json`.
type benchRow struct {
	Name  string  `json:"name"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	N     int     `json:"n"`
	// Pool row only: back-to-back throughput and containers left behind.
	SustainedPerS *float64 `json:"sustained_per_s,omitempty"`
	Leaked        *int     `json:"leaked,omitempty"`
	// Engine rows only: containers/s of the engine alone.
	PerS *float64 `json:"per_s,omitempty"`
}

func newBenchSandboxCmd(a *app) *cobra.Command {
	var n, runN, engineN int
	var image, cpuProfile string
	var profile bool
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
executor's Go CPU profile of the sustained run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cli, info, err := engine.Connect(ctx, cfg)
			if err != nil {
				return err
			}
			defer cli.Close()
			ws, err := os.MkdirTemp("", "agentbox-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(ws)
			if ws, err = filepath.EvalSymlinks(ws); err != nil {
				return err
			}
			os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)
			os.Chown(filepath.Join(ws, "main.go"), benchUID, benchUID)
			if err := benchOwner(ws); err != nil {
				return err
			}
			c := *cfg
			c.Workspace = ws
			c.Sandbox.Image = image
			c.Sandbox.PoolSize = max(c.Sandbox.PoolSize, 2)
			progress := a.stderr()
			fmt.Fprintf(progress, "engine %s (%s), image %s, n=%d\n", info.Host, info.Version, image, n)

			var phases *phaseLog
			var log *slog.Logger
			if profile {
				phases = newPhaseLog()
				log = slog.New(phases)
			}
			r, err := openWarm(ctx, &c, log)
			if err != nil {
				return err
			}
			var rows []benchRow
			fmt.Fprintln(progress, "agentbox-pool ...")
			lat, err := timePool(ctx, r, n, c.Sandbox.PoolSize)
			if err != nil {
				r.Close(context.WithoutCancel(ctx))
				return fmt.Errorf("pool: %w", err)
			}
			pool := row("agentbox-pool", lat)
			fmt.Fprintln(progress, "agentbox-pool sustained ...")
			if phases != nil {
				phases.reset()
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
			}
			cpu0 := readCPU()
			start := time.Now()
			for i := 0; i < runN; i++ {
				if _, err := r.Run(ctx, sandbox.Spec{Argv: []string{"true"}}); err != nil {
					r.Close(context.WithoutCancel(ctx))
					return fmt.Errorf("sustained: %w", err)
				}
			}
			rate := float64(runN) / time.Since(start).Seconds()
			cpu1 := readCPU()
			if cpuProfile != "" {
				pprof.StopCPUProfile()
			}
			id := r.ID()
			if err := r.Close(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			left, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelExecutor+"="+id))})
			if err != nil {
				return err
			}
			leaked := len(left)
			pool.SustainedPerS, pool.Leaked = &rate, &leaked
			rows = append(rows, pool)
			if phases != nil {
				phases.print(progress, fmt.Sprintf("the pool's containers during the sustained run (%d runs)", runN))
				fmt.Fprintln(progress, cpu0.perItem(cpu1, runN))
			}

			// The engine alone, as the ceiling of the sustained figure.
			if engineN <= 0 {
				engineN = runN
			}
			for _, par := range []int{1, 4} {
				name := fmt.Sprintf("engine-cycle-x%d", par)
				fmt.Fprintf(progress, "%s ...\n", name)
				e0 := readCPU()
				lat, perS, err := engineCycles(ctx, cli, image, engineN, par)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				if profile {
					fmt.Fprintf(progress, "%s: %s\n", name, e0.perItem(readCPU(), engineN))
				}
				er := row(name, lat)
				er.PerS = &perS
				rows = append(rows, er)
			}

			// The same pool under gVisor, when the engine offers runsc.
			if rts, err := engine.Runtimes(ctx, cli); err == nil && slices.Contains(rts, "runsc") && c.Sandbox.Runtime != "runsc" {
				fmt.Fprintln(progress, "agentbox-pool-runsc ...")
				g := c
				g.Sandbox.Runtime = "runsc"
				rg, err := openWarm(ctx, &g, nil)
				if err != nil {
					return fmt.Errorf("runsc pool: %w", err)
				}
				glat, err := timePool(ctx, rg, n, g.Sandbox.PoolSize)
				rg.Close(context.WithoutCancel(ctx))
				if err != nil {
					return fmt.Errorf("runsc pool: %w", err)
				}
				rows = append(rows, row("agentbox-pool-runsc", glat))
			} else {
				fmt.Fprintln(progress, "the engine has no runsc runtime (AGENTBOX_SANDBOX_RUNTIME=runsc agentbox engine start registers it): no agentbox-pool-runsc row")
			}

			dockerCLI, _ := exec.LookPath("docker")
			if dockerCLI != "" {
				env := dockerEnv(os.Environ(), info.Host)
				fmt.Fprintln(progress, "docker-exec ...")
				name := fmt.Sprintf("agentbox-bench-%d", os.Getpid())
				// Every docker CLI call talks to the engine agentbox found,
				// which may be the private one the CLI knows nothing of.
				if err := cmdRunner(ctx, env, dockerCLI, "run", "-d", "--rm", "--name", name, "--network", "none", image, "sleep", "3600")(); err != nil {
					return fmt.Errorf("docker run -d (the container for the docker exec row): %w", err)
				}
				execLat, err := timeN(n, nil, cmdRunner(ctx, env, dockerCLI, "exec", name, "true"))
				if rmErr := cmdRunner(context.WithoutCancel(ctx), env, dockerCLI, "rm", "-f", name)(); rmErr != nil {
					fmt.Fprintf(progress, "removing container %s: %v\n", name, rmErr)
				}
				if err != nil {
					return fmt.Errorf("docker exec: %w", err)
				}
				rows = append(rows, row("docker-exec", execLat))
				fmt.Fprintln(progress, "docker-run ...")
				runLat, err := timeN(min(n, 30), nil, cmdRunner(ctx, env, dockerCLI, "run", "--rm", "--network", "none", image, "true"))
				if err != nil {
					return fmt.Errorf("docker run: %w", err)
				}
				rows = append(rows, row("docker-run", runLat))
			} else {
				fmt.Fprintln(progress, "docker CLI not installed: no docker-exec/docker-run rows")
			}
			if bwrap, err := exec.LookPath("bwrap"); err == nil {
				fmt.Fprintln(progress, "bwrap ...")
				bwLat, err := timeN(n, nil, cmdRunner(ctx, nil, bwrap, bwrapArgs(ws, "true")...))
				if err != nil {
					return fmt.Errorf("bwrap: %w", err)
				}
				rows = append(rows, row("bwrap", bwLat))
			} else {
				fmt.Fprintln(progress, "bwrap not installed: no bwrap row")
			}
			if a.jsonOut {
				enc := json.NewEncoder(a.stdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			printBench(a, rows, runN)
			return nil
		},
	}
	cmd.Flags().IntVar(&n, "n", 100, "runs per row (docker run: at most 30)")
	cmd.Flags().IntVar(&runN, "sustained", 50, "back-to-back runs for the throughput figure")
	cmd.Flags().StringVar(&image, "image", images.Minimal, "image for every row")
	cmd.Flags().IntVar(&engineN, "engine-n", 0, "containers per engine-cycle row (default: --sustained)")
	cmd.Flags().BoolVar(&profile, "profile", false, "print per-phase times of the pool's containers and CPU per container")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write the executor's CPU profile of the sustained run to `FILE`")
	return cmd
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

// timeN runs before (untimed) then fn (timed) n times.
func timeN(n int, before, fn func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		if before != nil {
			if err := before(); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func cmdRunner(ctx context.Context, env []string, name string, args ...string) func() error {
	return func() error {
		c := exec.CommandContext(ctx, name, args...)
		c.Env = env
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
}

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

func row(name string, d []time.Duration) benchRow {
	return benchRow{Name: name, P50MS: pct(d, 50), P95MS: pct(d, 95), N: len(d)}
}

// pct is the nearest-rank percentile in milliseconds.
func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

func printBench(a *app, rows []benchRow, runN int) {
	tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tn\tp50 ms\tp95 ms\tp50 / pool p50\t")
	pool := rows[0]
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.1fx\t\n", r.Name, r.N, r.P50MS, r.P95MS, r.P50MS/pool.P50MS)
	}
	tw.Flush()
	fmt.Fprintf(a.stdout(), "\nsustained: %.1f throwaway containers/s over %d back-to-back runs; containers left after Close: %d\n", *pool.SustainedPerS, runN, *pool.Leaked)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(a.stdout(), "target pool p50 <= 10 ms: %s (%.2f ms)\n", verdict(pool.P50MS <= 10), pool.P50MS)
	byName := map[string]benchRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	if r, ok := byName["docker-exec"]; ok {
		fmt.Fprintf(a.stdout(), "target pool >= 6x faster than docker exec: %s (%.1fx)\n", verdict(r.P50MS >= 6*pool.P50MS), r.P50MS/pool.P50MS)
		if g, ok := byName["agentbox-pool-runsc"]; ok {
			fmt.Fprintf(a.stdout(), "gVisor pool: p50 %.2f ms, %.2fx docker exec (runc) p50\n", g.P50MS, g.P50MS/r.P50MS)
		}
	}
	for _, name := range []string{"engine-cycle-x1", "engine-cycle-x4"} {
		if r, ok := byName[name]; ok && r.PerS != nil {
			fmt.Fprintf(a.stdout(), "%s: the engine alone, %.1f containers/s; the pool's sustained rate is %.2fx that\n", name, *r.PerS, *pool.SustainedPerS / *r.PerS)
		}
	}
	fmt.Fprintf(a.stdout(), "target >= 20 containers/s with no leak: %s\n", verdict(*pool.SustainedPerS >= 20 && *pool.Leaked == 0))
}
