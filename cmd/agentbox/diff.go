package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/termtext"
)

func init() { register(newDiffCmd) }

func newDiffCmd(a *app) *cobra.Command {
	var color, since, session string
	cmd := &cobra.Command{
		Use:   "diff [CALL | --since CALL|CHECKPOINT|session:ID | --session ID]",
		Short: "Show what a call, or a range of calls, changed as a unified diff (binary files summarised)",
		Long: `Without arguments, diff shows the changes of the last call that changed
something. With CALL, that call's changes.

--since and --session show the combined change of several calls: for each
path, from its state before the first of them changed it to its state after
the last one (a file edited five times is one diff; a file created and
deleted again is not shown). --since CALL starts at that call, --since
CHECKPOINT just after that checkpoint, --since session:ID at the first call
of that agent session (later calls of any session included); --session ID
keeps only that session's calls (with --since, from there on).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (since != "" || session != "") {
				return fmt.Errorf("give either CALL or --since/--session, not both")
			}
			colour, err := useColor(color, a.stdout(), a.jsonOut, os.Getenv)
			if err != nil {
				return err
			}
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			if since != "" || session != "" {
				es, err := st.Entries(ctx, snapshot.Range{Since: since, Session: session})
				if err != nil {
					return err
				}
				changes := snapshot.NetChanges(es)
				return writeDiff(ctx, a, colour, func(w io.Writer) error { return st.DiffChanges(ctx, changes, w) },
					func(diff string) any {
						ids := make([]string, 0, len(es))
						for _, e := range es {
							ids = append(ids, e.ID)
						}
						return map[string]any{"since": since, "session": session, "entries": ids,
							"changes": toHistory(snapshot.Entry{Changes: changes}).Changes, "diff": diff}
					})
			}
			var e snapshot.Entry
			if len(args) == 1 {
				e, err = st.Get(ctx, args[0])
			} else {
				e, err = lastChange(ctx, st)
				if err == nil && !a.jsonOut {
					fmt.Fprintf(a.stderr(), "agentbox: call %s (%s)\n", e.ID, termtext.Line(entryLabel(e)))
				}
			}
			if err != nil {
				return err
			}
			return writeDiff(ctx, a, colour, func(w io.Writer) error { return st.DiffChanges(ctx, e.Changes, w) },
				func(diff string) any {
					h := toHistory(e)
					return map[string]any{"id": h.ID, "changes": h.Changes, "diff": diff}
				})
		},
	}
	cmd.Flags().StringVar(&color, "color", "auto", "colour the diff: auto (on a terminal, unless NO_COLOR is set), always or never")
	cmd.Flags().StringVar(&since, "since", "", "combined change since CALL, since CHECKPOINT, or since session:ID began")
	cmd.Flags().StringVar(&session, "session", "", "combined change of one session's calls")
	return cmd
}

// lastChange is the newest entry that changed something, checkpoints
// aside.
func lastChange(ctx context.Context, st *snapshot.Store) (snapshot.Entry, error) {
	all, err := st.List(ctx, 0)
	if err != nil {
		return snapshot.Entry{}, err
	}
	for _, e := range all {
		if len(e.Changes) > 0 && e.Kind != snapshot.KindCheckpoint {
			return e, nil
		}
	}
	return snapshot.Entry{}, errors.New("no journaled call changed anything yet")
}

// writeDiff prints a diff for a person (escaped, optionally coloured) or,
// with --json, the object doc builds around the diff text.
func writeDiff(ctx context.Context, a *app, colour bool, diff func(io.Writer) error, doc func(string) any) error {
	if a.jsonOut {
		var b strings.Builder
		if err := diff(&b); err != nil {
			return err
		}
		return writeJSON(a.stdout(), doc(b.String()))
	}
	// File content and paths are escaped first; only the colour this
	// command adds reaches the terminal raw.
	var out io.Writer = a.stdout()
	var cw *diffColorizer
	if colour {
		cw = newDiffColorizer(out)
		out = cw
	}
	ew := &escapeWriter{w: out}
	err := diff(ew)
	if cerr := ew.Close(); err == nil {
		err = cerr
	}
	if cw != nil {
		if cerr := cw.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// oneLine cuts s to at most n bytes on one line.
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
