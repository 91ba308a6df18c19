package main

import (
	"fmt"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/spf13/cobra"
)

func init() { register(newUndoCmd) }

func newUndoCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "undo [CALL]",
		Short: "Revert one call's changes (default: the latest call not yet undone)",
		Long: `Revert exactly the changes one journaled call made. The undo is itself
journaled, so undoing an undo is a redo. Without CALL, undo works like an
editor's: it reverts the most recent call that changed something and has not
been undone yet; repeat it to walk back through history.

If a later call or someone else changed one of the same paths since, undo
stops and lists the conflicts; --force reverts anyway.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			e, err := st.Undo(cmd.Context(), id, force, cliCall)
			if err != nil {
				return reportConflict(a, err)
			}
			return reportRestore(a, e, "undid "+e.Reverts)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "undo even if the paths were changed since")
	return cmd
}

// reportRestore prints the entry an undo or rollback journaled.
func reportRestore(a *app, e snapshot.Entry, what string) error {
	if a.jsonOut {
		return writeJSON(a.stdout(), toHistory(e))
	}
	fmt.Fprintf(a.stdout(), "%s as %s: %d path(s) restored\n", termtext.Line(what), termtext.Line(e.ID), len(e.Changes))
	for _, c := range e.Changes {
		fmt.Fprintf(a.stdout(), "    %s %s\n", opLetters[c.Op], termtext.Line(c.Path))
	}
	return nil
}
