package main

import (
	"fmt"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/spf13/cobra"
)

func init() { register(newSnapshotsCmd) }

func newSnapshotsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshots", Short: "Manage the snapshot store"}
	var keep int
	var maxBytes int64
	var maxAge string
	gc := &cobra.Command{
		Use:   "gc",
		Short: "Drop old journal entries and the content only they referenced",
		Long: `Drop journal entries beyond the retention of the snapshot config section
(keep_calls, max_age, max_bytes; flags override), then delete stored content
that no kept entry, kept checkpoint or the current tree references. The
newest entry is always kept.

The size limit (max_bytes) is also applied automatically after every call
that takes the store past it, down to 90% of it; run gc by hand to apply
keep_calls and max_age, or to free space now (for example when calls are
refused because of snapshot.min_free_bytes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			p := snapshot.Policy(cfg)
			if cmd.Flags().Changed("keep-calls") {
				p.KeepCalls = keep
			}
			if cmd.Flags().Changed("max-bytes") {
				p.MaxBytes = maxBytes
			}
			if cmd.Flags().Changed("max-age") {
				d, err := parseAge(maxAge)
				if err != nil {
					return err
				}
				p.MaxAge = d
			}
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			stats, err := st.GC(cmd.Context(), p)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), stats)
			}
			fmt.Fprintf(a.stdout(), "removed %d entries and %d blobs (%d bytes); kept %d entries, %d bytes\n",
				stats.EntriesRemoved, stats.BlobsRemoved, stats.BytesFreed, stats.EntriesKept, stats.BytesKept)
			return nil
		},
	}
	gc.Flags().IntVar(&keep, "keep-calls", 0, "keep at most N entries (0: no limit)")
	gc.Flags().StringVar(&maxAge, "max-age", "", "drop entries older than this (e.g. 72h, 0: no limit)")
	gc.Flags().Int64Var(&maxBytes, "max-bytes", 0, "keep the store under this many bytes (0: no limit)")
	cmd.AddCommand(gc)
	return cmd
}

func parseAge(s string) (d time.Duration, err error) {
	d, err = time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--max-age %q: %w", s, err)
	}
	return d, nil
}
