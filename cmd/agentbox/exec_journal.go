package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/workspace"
)

func init() { registerExecWrapper(journalExec) }

// journalExec records what an `agentbox exec` command changed as one
// journal entry (session "cli", tool "exec"), like any mutating call: the
// workspace's store (workspace.Snapshots) scans it before and after and
// ends the snapshot by the rule of every tool call (tools.EndSnapshot), so
// `agentbox undo` can revert it. A command that timed out or was
// interrupted is journaled too, since it may have changed files before it
// was killed; one that never ran is not.
func journalExec(a *app, cfg *config.Config, next execFunc) execFunc {
	return func(ctx context.Context, spec sandbox.Spec) (res sandbox.Result, err error) {
		// Whatever happens, the command lands in the audit log like a tool
		// call: what was run, its exit code, container and journal entry.
		input := map[string]any{"command": execCommandLine(spec), "workdir": spec.Workdir}
		if spec.Timeout > 0 {
			input["timeout"] = spec.Timeout.String()
		}
		rec := startCLIAudit("exec", input)
		var entry *tools.JournalEntry
		ran := false
		defer func() {
			var exit *int
			if ran {
				exit = &res.ExitCode
			}
			id, changed := "", []string(nil)
			if entry != nil {
				id = entry.ID
				for _, ch := range entry.Changes {
					changed = append(changed, ch.Path)
				}
			}
			if aerr := rec.finish(ctx, cfg, id, changed, exit, res.ContainerID, err); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}()
		snaps := workspace.NewSnapshots(cfg, nil)
		defer snaps.Close()
		var runErr error
		info := tools.SnapshotInfo{Session: cliSession, Tool: "exec", Summary: execSummary(spec)}
		entry, err = snaps.Journal(ctx, info, func(ctx context.Context) bool {
			res, runErr = next(ctx, spec)
			// Any error but a timeout or an interrupt: the command never ran.
			ran = runErr == nil || errors.Is(runErr, sandbox.ErrTimeout) || errors.Is(runErr, sandbox.ErrCanceled)
			return ran
		})
		if err != nil {
			return res, errors.Join(runErr, err)
		}
		// Tell a person at a terminal how to see and revert the change; keep
		// the output of scripts exactly the command's own.
		if f, ok := a.stderr().(*os.File); ok && isTerminal(f) && entry != nil && len(entry.Changes) > 0 && !a.jsonOut {
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
