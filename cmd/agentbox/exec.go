package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

func init() { register(newExecCmd) }

// execFunc runs one `agentbox exec` command in the sandbox.
type execFunc func(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)

// execWrappers wrap every `agentbox exec` run, outermost last (the
// snapshot journal registers one from its own file's init).
var execWrappers []func(a *app, cfg *config.Config, next execFunc) execFunc

func registerExecWrapper(w func(a *app, cfg *config.Config, next execFunc) execFunc) {
	execWrappers = append(execWrappers, w)
}

func newExecCmd(a *app) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exec [--workspace DIR] [--timeout D] -- CMD [ARG...]",
		Short: "Run a command in a throwaway sandbox container and exit with its status",
		Long: `exec runs one command in a fresh, hardened container that sees only the
workspace (at the same path), streams its output and exits with its exit
status (128+N when killed by signal N; 137 on timeout).

A single argument is a shell command line (run with bash -c, or sh -c
when the image has no bash); several arguments are run as that exact argv.
The command's stdin is closed. It starts in the current directory when that
lies inside the workspace, else in the workspace root.

What it changes in the workspace is journaled as one call (agentbox
history, undo). Two shell commands on one workspace (exec, an agent's Bash)
run one after the other; file edits, undo and rollback do not wait for a
running one (snapshot.serial_calls: true makes them wait).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := a.ensureEngine(ctx, cfg); err != nil {
				return err
			}
			spec := sandbox.Spec{Timeout: timeout, Workdir: execWorkdir(cfg.Workspace)}
			if len(args) == 1 {
				spec.Shell = args[0]
			} else {
				spec.Argv = args
			}
			stdout, stderr := a.stdout(), a.stderr()
			if a.jsonOut { // the output goes into the JSON instead
				stdout, stderr = io.Discard, io.Discard
			}
			res, err := runExec(ctx, a, cfg, spec, stdout, stderr)
			if a.jsonOut && (err == nil || errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrCanceled)) {
				if jerr := printExecJSON(a, res, err); jerr != nil {
					return jerr
				}
				if res.ExitCode != 0 {
					return exitCode(res.ExitCode)
				}
				return nil
			}
			switch {
			case errors.Is(err, sandbox.ErrTimeout):
				fmt.Fprintf(a.stderr(), "agentbox: %v; killed\n", err)
			case errors.Is(err, sandbox.ErrCanceled):
				fmt.Fprintln(a.stderr(), "agentbox: interrupted; killed")
				return exitCode(130)
			case err != nil:
				return err
			}
			if res.OOMKilled {
				fmt.Fprintln(a.stderr(), "agentbox: the command ran out of memory (sandbox.memory_mb)")
			}
			if res.ExitCode != 0 {
				return exitCode(res.ExitCode)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "kill the command after this long (default sandbox.default_timeout, at most sandbox.max_timeout)")
	return cmd
}

// runExec opens a sandbox runner without a warm pool (one command), runs
// spec through the registered wrappers and streams its output.
func runExec(ctx context.Context, a *app, cfg *config.Config, spec sandbox.Spec, stdout, stderr io.Writer) (sandbox.Result, error) {
	c := *cfg
	c.Sandbox.PoolSize = 0
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := sandbox.Open(ctx, &c, log)
	if err != nil {
		return sandbox.Result{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		r.Close(cctx)
	}()
	var mu sync.Mutex
	spec.OnOutput = func(s sandbox.Stream, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if s == sandbox.Stderr {
			stderr.Write(p)
		} else {
			stdout.Write(p)
		}
	}
	var run execFunc = r.Run
	for _, w := range execWrappers {
		run = w(a, cfg, run)
	}
	return run(ctx, spec)
}

// execWorkdir is the current directory when inside the workspace, else
// the workspace root.
func execWorkdir(ws string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ws
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil && config.Within(real, ws) {
		return real
	}
	return ws
}

// execJSON is `agentbox exec --json` output.
type execJSON struct {
	ExitCode      int     `json:"exit_code"`
	Signal        string  `json:"signal,omitempty"`
	Stdout        string  `json:"stdout"`
	Stderr        string  `json:"stderr"`
	StdoutDropped int64   `json:"stdout_dropped"`
	StderrDropped int64   `json:"stderr_dropped"`
	Cwd           string  `json:"cwd"`
	TimedOut      bool    `json:"timed_out"`
	Killed        bool    `json:"killed"`
	OOMKilled     bool    `json:"oom_killed"`
	DurationMS    float64 `json:"duration_ms"`
	ContainerID   string  `json:"container_id"`
	Error         string  `json:"error,omitempty"`
}

func printExecJSON(a *app, res sandbox.Result, err error) error {
	j := execJSON{
		ExitCode: res.ExitCode, Signal: res.Signal, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		StdoutDropped: res.StdoutDropped, StderrDropped: res.StderrDropped, Cwd: res.Cwd,
		TimedOut: res.TimedOut, Killed: res.Killed, OOMKilled: res.OOMKilled,
		DurationMS: float64(res.Duration.Microseconds()) / 1000, ContainerID: res.ContainerID,
	}
	if err != nil {
		j.Error = err.Error()
	}
	enc := json.NewEncoder(jsonWriter{a.stdout()})
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}
