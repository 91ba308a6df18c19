package main

import (
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newDiffCmd) }

func newDiffCmd(a *app) *cobra.Command {
	var color string
	cmd := &cobra.Command{
		Use:   "diff CALL",
		Short: "Show a journaled call's changes as a unified diff (binary files summarised)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			colour, err := useColor(color, a.stdout(), a.jsonOut, os.Getenv)
			if err != nil {
				return err
			}
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			if !a.jsonOut {
				// File content and paths are escaped first; only the
				// colour this command adds reaches the terminal raw.
				var out io.Writer = a.stdout()
				var cw *diffColorizer
				if colour {
					cw = newDiffColorizer(out)
					out = cw
				}
				ew := &escapeWriter{w: out}
				err := st.Diff(cmd.Context(), args[0], ew)
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
			e, err := st.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var b strings.Builder
			if err := st.Diff(cmd.Context(), e.ID, &b); err != nil {
				return err
			}
			h := toHistory(e)
			return writeJSON(a.stdout(), map[string]any{"id": h.ID, "changes": h.Changes, "diff": b.String()})
		},
	}
	cmd.Flags().StringVar(&color, "color", "auto", "colour the diff: auto (on a terminal, unless NO_COLOR is set), always or never")
	return cmd
}
