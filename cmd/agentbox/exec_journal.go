package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/snapshot"
)

func init() { registerExecWrapper(journalExec) }

// journalExec records what an `agentbox exec` command changed as one
// journal entry (session "cli", tool "exec"), like any mutating call: the
// workspace is scanned before and after, so `agentbox undo` can revert it.
// A command that timed out or was interrupted is journaled too, since it
// may have changed files before it was killed.
func journalExec(a *app, cfg *config.Config, next execFunc) execFunc {
	return func(ctx context.Context, spec sandbox.Spec) (res sandbox.Result, err error) {
		// Whatever happens, the command lands in the audit log like a tool
		// call: what was run, its exit code, container and journal entry.
		input := map[string]any{"command": execCommandLine(spec), "workdir": spec.Workdir}
		if spec.Timeout > 0 {
			input["timeout"] = spec.Timeout.String()
		}
		rec := startCLIAudit("exec", input)
		var entry snapshot.Entry
		ran := false
		defer func() {
			var exit *int
			if ran {
				exit = &res.ExitCode
			}
			if aerr := rec.finish(ctx, cfg, &entry, exit, res.ContainerID, err); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}()
		store, err := snapshot.OpenConfig(ctx, cfg)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("snapshot store: %w", err)
		}
		defer store.Close()
		call, err := store.Begin(ctx, snapshot.CallInfo{Session: cliSession, Tool: "exec", Summary: execSummary(spec)}, snapshot.Whole())
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("snapshot before the command: %w", err)
		}
		res, runErr := next(ctx, spec)
		if runErr != nil && !errors.Is(runErr, sandbox.ErrTimeout) && !errors.Is(runErr, sandbox.ErrCanceled) {
			// The command never ran: nothing to record.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := call.Abort(actx); err != nil {
				return res, errors.Join(runErr, fmt.Errorf("snapshot abort: %w", err))
			}
			return res, runErr
		}
		ran = true
		// Finish even when ctx was cancelled: the scan after must run.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		entry, err = call.Finish(fctx)
		if err != nil {
			return res, errors.Join(runErr, fmt.Errorf("snapshot after the command: %w", err))
		}
		// Tell a person at a terminal how to see and revert the change; keep
		// the output of scripts exactly the command's own.
		if f, ok := a.stderr().(*os.File); ok && isTerminal(f) && len(entry.Changes) > 0 && !a.jsonOut {
			n := len(entry.Changes)
			fmt.Fprintf(f, "agentbox: call %s changed %d path(s); see `agentbox diff %s`, revert with `agentbox undo %s`\n", entry.ID, n, entry.ID, entry.ID)
		}
		return res, runErr
	}
}

// execCommandLine is the command an exec spec runs, as one line: the
// shell command, or the argv with the arguments that need it quoted.
func execCommandLine(spec sandbox.Spec) string {
	if spec.Shell != "" {
		return spec.Shell
	}
	q := make([]string, len(spec.Argv))
	for i, arg := range spec.Argv {
		if arg == "" || strings.ContainsAny(arg, " \t\n'\"\\$`|&;<>()*?[]{}~#") {
			arg = strconv.Quote(arg)
		}
		q[i] = arg
	}
	return strings.Join(q, " ")
}

// execSummary is the journal's one-line description of an exec command.
func execSummary(spec sandbox.Spec) string {
	s := execCommandLine(spec)
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
