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
		Args:  cobra.NoArgs,
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
