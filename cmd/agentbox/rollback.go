package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func init() { register(newRollbackCmd) }

func newRollbackCmd(a *app) *cobra.Command {
	var to string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "rollback --to CALL [--dry-run]",
		Short: "Restore every path changed since just before CALL to its state then",
		Long: `Restore every path that CALL or any later call changed to its state just
before CALL (for a checkpoint: its state at the checkpoint). Paths no call
touched are left alone. The rollback is journaled, so it can be undone.
--dry-run prints what would change, and the paths changed outside any
journaled call that the rollback would overwrite, and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, st, err := openConfigSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			if dryRun {
				p, err := st.PlanRollback(cmd.Context(), to)
				if err != nil {
					return err
				}
				return reportPlan(a, p, false)
			}
			rec := startCLIAudit("rollback", map[string]any{"to": to})
			e, err := st.Rollback(cmd.Context(), to, cliCall)
			if aerr := rec.finish(cmd.Context(), cfg, e.ID, entryPaths(e), nil, "", err); aerr != nil {
				return errors.Join(err, aerr)
			}
			if err != nil {
				return err
			}
			return reportRestore(a, e, "rolled back to just before "+e.RollbackTo)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the call to roll back to (required)")
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "print what would change; change nothing")
	cmd.MarkFlagRequired("to")
	return cmd
}
