package main

import (
	"github.com/spf13/cobra"
)

func init() { register(newRollbackCmd) }

func newRollbackCmd(a *app) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "rollback --to CALL",
		Short: "Restore every path changed since just before CALL to its state then",
		Long: `Restore every path that CALL or any later call changed to its state just
before CALL (for a checkpoint: its state at the checkpoint). Paths no call
touched are left alone. The rollback is journaled, so it can be undone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			e, err := st.Rollback(cmd.Context(), to, cliCall)
			if err != nil {
				return err
			}
			return reportRestore(a, e, "rolled back to just before "+e.RollbackTo)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the call to roll back to (required)")
	cmd.MarkFlagRequired("to")
	return cmd
}
