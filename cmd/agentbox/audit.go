package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/agentbox/agentbox/tools/workspace"
	"github.com/spf13/cobra"
)

func init() { register(newAuditCmd) }

func newAuditCmd(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log of tool calls (newest last)",
		Long: `Show the workspace's audit log: one record per tool call with its time,
session, call id, tool, decision and who decided, exit code, duration,
changed paths and the command (or path) it was about. Besides tool calls it
records the commands run on the command line: exec, undo, rollback and
checkpoint. Inputs are stored with secret-looking values masked. Each
record carries the hash of the previous one; "agentbox audit verify" checks
the chain. A record is in the file when its call returns and on disk a few
milliseconds later (group commit): a power loss can lose the last few.
--json prints the records as a JSON array.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := openAudit(a)
			if err != nil {
				return err
			}
			recs, err := log.Read()
			if err != nil {
				return err
			}
			if limit > 0 && len(recs) > limit {
				recs = recs[len(recs)-limit:]
			}
			if a.jsonOut {
				if recs == nil {
					recs = []audit.Record{}
				}
				enc := json.NewEncoder(jsonWriter{a.stdout()})
				enc.SetIndent("", "  ")
				return enc.Encode(recs)
			}
			tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tSESSION\tCALL\tTOOL\tDECISION\tEXIT\tMS\tJOURNAL\tRESULT\tCOMMAND")
			for _, r := range recs {
				dec := r.Decision
				if r.DecidedBy != "" {
					dec += " (" + r.DecidedBy + ")"
				}
				if dec == "" {
					dec = "-"
				}
				exit := "-"
				if r.ExitCode != nil {
					exit = fmt.Sprint(*r.ExitCode)
				}
				result := "ok"
				if r.ErrorKind != "" {
					result = r.ErrorKind
				}
				if n := len(r.Changed); n > 0 {
					result += fmt.Sprintf(", %d changed", n)
				}
				j := r.JournalID
				if j == "" {
					j = "-"
				}
				l := termtext.Line // every field but the numbers comes from the log
				subject := auditSubject(r.Input, 60)
				if subject == "" {
					subject = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), l(r.Session), l(r.CallID), l(r.Tool), l(dec), exit, r.DurationMS, l(j), l(result), l(subject))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show only the last N records")
	cmd.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Check the audit log's hash chain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := openAudit(a)
			if err != nil {
				return err
			}
			n, verr := log.Verify()
			if a.jsonOut {
				out := map[string]any{"ok": verr == nil, "records": n, "path": log.Path(), "error": nil}
				if verr != nil {
					out["error"] = verr.Error()
				}
				json.NewEncoder(jsonWriter{a.stdout()}).Encode(out)
				if verr != nil {
					return exitCode(1)
				}
				return nil
			}
			if verr != nil {
				fmt.Fprintf(a.stderr(), "agentbox: audit log %s: %s (%d records verified before it)\n", termtext.Line(log.Path()), termtext.Line(verr.Error()), n)
				return exitCode(1)
			}
			fmt.Fprintf(a.stdout(), "ok: %d records, hash chain intact (%s)\n", n, termtext.Line(log.Path()))
			return nil
		},
	})
	return cmd
}

// openAudit opens the audit log of the configured workspace.
func openAudit(a *app) (*audit.Log, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	return audit.Open(workspace.AuditPath(cfg))
}
