package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/spf13/cobra"
)

func init() { register(newUndoCmd) }

func newUndoCmd(a *app) *cobra.Command {
	var force, dryRun bool
	var session string
	cmd := &cobra.Command{
		Use:   "undo [CALL | --session ID] [--dry-run] [--force]",
		Short: "Revert one call's changes (default: the latest call not yet undone)",
		Long: `Revert exactly the changes one journaled call made. The undo is itself
journaled, so undoing an undo is a redo. Without CALL, undo works like an
editor's: it reverts the most recent call that changed something and has not
been undone yet; repeat it to walk back through history. --session ID limits
that to one session's calls (as ` + "`agentbox history`" + ` shows them).

When the latest calls come from more than one session (two agents at work
within 10 minutes of each other), "the last call" is unclear: undo without
CALL then changes nothing and names the candidates.

If a later call or someone else changed one of the same paths since, undo
stops and lists the conflicts; --force reverts anyway. --dry-run prints what
the undo would change and its conflicts, and changes nothing.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, st, err := openConfigSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			id, asked := "", ""
			if len(args) == 1 {
				asked = args[0]
				if session != "" {
					return errors.New("give either CALL or --session, not both")
				}
				id = args[0]
			} else if id, err = lastUndoable(cmd.Context(), st, session); err != nil {
				return err
			}
			if dryRun {
				p, err := st.PlanUndo(cmd.Context(), id)
				if err != nil {
					return err
				}
				return reportPlan(a, p, force)
			}
			rec := startCLIAudit("undo", map[string]any{"call": asked, "force": force})
			e, err := st.Undo(cmd.Context(), id, force, cliCall)
			if aerr := rec.finish(cmd.Context(), cfg, e.ID, entryPaths(e), nil, "", err); aerr != nil {
				return errors.Join(err, aerr)
			}
			if err != nil {
				return reportConflict(a, err)
			}
			return reportRestore(a, e, "undid "+e.Reverts)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "undo even if the paths were changed since")
	cmd.Flags().StringVar(&session, "session", "", "without CALL: undo that session's latest call")
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "print what would change and the conflicts; change nothing")
	return cmd
}

// lastCallWindow is how close in time the latest calls of two sessions
// must be for "the last call" to be unclear.
const lastCallWindow = 10 * time.Minute

// lastUndoable is the call `undo` without CALL reverts: the newest one that
// changed something and has not been undone (of session, when set). When
// another session's newest such call is within lastCallWindow of it, two
// agents were at work and the person must say which call they mean.
func lastUndoable(ctx context.Context, st *snapshot.Store, session string) (string, error) {
	es, err := st.Undoable(ctx, session, 0)
	if err != nil {
		return "", err
	}
	if len(es) == 0 {
		if session != "" {
			return "", fmt.Errorf("session %s has no call left to undo (see `agentbox history`)", termtext.Line(session))
		}
		return "", errors.New("nothing to undo: no call that changed something is left (see `agentbox history`)")
	}
	last := es[0]
	if session != "" {
		return last.ID, nil
	}
	for _, e := range es[1:] {
		if e.Session == last.Session {
			continue
		}
		if last.Time.Sub(e.Time) > lastCallWindow {
			break
		}
		how := fmt.Sprintf("Name the call (`agentbox undo %s`)", last.ID)
		if last.Session != "" { // --session "" means every session
			how += fmt.Sprintf(" or the session (`agentbox undo --session %s`)", termtext.Line(shellQuote(last.Session)))
		}
		return "", fmt.Errorf("the latest calls come from two sessions, so \"the last call\" is unclear and nothing was undone:\n  %s\n  %s\n%s",
			describeEntry(last), describeEntry(e), how)
	}
	return last.ID, nil
}

func describeEntry(e snapshot.Entry) string {
	return fmt.Sprintf("%s  %s  session %s  %s", e.ID, e.Time.Local().Format("15:04:05"),
		termtext.Line(sessionName(e.Session)), termtext.Line(entryLabel(e)))
}

func sessionName(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// reportRestore prints the entry an undo or rollback journaled.
func reportRestore(a *app, e snapshot.Entry, what string) error {
	if a.jsonOut {
		return writeJSON(a.stdout(), toHistory(e))
	}
	fmt.Fprintf(a.stdout(), "%s as %s: %d path(s) restored\n", termtext.Line(what), termtext.Line(e.ID), len(e.Changes))
	printChanges(a.stdout(), e.Changes, false)
	return nil
}

// planJSON is `undo --dry-run --json` and `rollback --dry-run --json`.
type planJSON struct {
	DryRun    bool                `json:"dry_run"`
	Kind      snapshot.Kind       `json:"kind"`
	Target    string              `json:"target"`
	Changes   []historyChange     `json:"changes"`
	Conflicts []snapshot.Conflict `json:"conflicts"`
	Blocked   string              `json:"blocked,omitempty"`
	// WouldRun says whether the same command without --dry-run would go
	// ahead (false: it would stop at the conflicts or at Blocked).
	WouldRun bool `json:"would_run"`
}

// reportPlan prints a dry run. force is whether the real command would be
// run with --force (an undo's conflicts then do not stop it).
func reportPlan(a *app, p snapshot.Plan, force bool) error {
	wouldRun := p.Blocked == "" && (force || p.Kind != snapshot.KindUndo || len(p.Conflicts) == 0)
	if a.jsonOut {
		return writeJSON(a.stdout(), planJSON{DryRun: true, Kind: p.Kind, Target: p.Target,
			Changes: toHistory(snapshot.Entry{Changes: p.Changes}).Changes, Conflicts: p.Conflicts, Blocked: p.Blocked, WouldRun: wouldRun})
	}
	w := a.stdout()
	what := "undo " + p.Target
	if p.Kind == snapshot.KindRollback {
		what = "rollback to just before " + p.Target
	}
	fmt.Fprintf(w, "dry run: %s would restore %d path(s); nothing was changed\n", termtext.Line(what), len(p.Changes))
	printChanges(w, p.Changes, false)
	if len(p.Conflicts) > 0 {
		fmt.Fprintf(w, "%d conflict(s):\n", len(p.Conflicts))
		for _, c := range p.Conflicts {
			fmt.Fprintf(w, "    %s: %s\n", termtext.Line(c.Path), termtext.Line(c.Reason))
		}
	}
	switch {
	case p.Blocked != "":
		fmt.Fprintf(w, "it would fail: %s\n", termtext.Line(p.Blocked))
	case !wouldRun:
		fmt.Fprintln(w, "it would stop at the conflicts; --force would undo anyway")
	}
	return nil
}
