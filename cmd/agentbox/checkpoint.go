package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func init() { register(newCheckpointCmd) }

func newCheckpointCmd(a *app) *cobra.Command {
	var msg string
	cmd := &cobra.Command{
		Use:   "checkpoint [-m MESSAGE]",
		Short: "Snapshot the whole workspace now, to `rollback --to` later",
		Long: `checkpoint records the whole workspace as it is now, so that
rollback --to can bring it back, and journals what changed outside any call
since the last scan as its changes. It waits for a running shell command
(an agent's Bash, agentbox exec) to end: its scan could not tell that
command's writes from yours.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, st, err := openConfigSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			if msg == "" {
				msg = "checkpoint"
			}
			rec := startCLIAudit("checkpoint", map[string]any{"message": msg})
			e, err := st.Checkpoint(cmd.Context(), msg, cliCall)
			if aerr := rec.finish(cmd.Context(), cfg, e.ID, entryPaths(e), nil, "", err); aerr != nil {
				return errors.Join(err, aerr)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), toHistory(e))
			}
			fmt.Fprintf(a.stdout(), "checkpoint %s; restore it with: agentbox rollback --to %s\n", e.ID, e.ID)
			return nil
		},
	}
	cmd.Flags().StringVarP(&msg, "message", "m", "", "what this point is")
	return cmd
}
