package main

import (
	"encoding/json"
	"fmt"
	"strings"
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
	var network bool
	var call string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log of tool calls (newest last)",
		Long: `Show the workspace's audit log: one record per tool call with its time,
session, call id, tool, decision and who decided, exit code, duration,
changed paths and the command (or path) it was about. Besides tool calls it
records the commands run on the command line: exec, undo, rollback and
checkpoint, and every network connection a command opened through the
egress proxy (tool "network": destination, address, decision, bytes each
way; "large upload" from 1 MiB sent). --network shows only those, --call
only the records of one call. Inputs are stored with secret-looking values masked. Each
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
			recs = filterAudit(recs, network, call)
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
				if n := r.Network; n != nil {
					subject, result = networkSubject(n), networkResult(r)
				}
				if subject == "" {
					subject = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), l(r.Session), l(r.CallID), l(r.Tool), l(dec), exit, r.DurationMS, l(j), l(result), l(subject))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show only the last N records")
	cmd.Flags().BoolVar(&network, "network", false, "show only network connections")
	cmd.Flags().StringVar(&call, "call", "", "show only the records of this call id")
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

// filterAudit keeps the network records (network) and the records of
// one call (call != "").
func filterAudit(recs []audit.Record, network bool, call string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if (network && r.Network == nil) || (call != "" && r.CallID != call) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// networkSubject is the COMMAND column of a connection: "CONNECT
// host:port" or "GET host:port", and the address dialed.
func networkSubject(n *audit.Connection) string {
	verb := n.Method
	switch n.Kind {
	case "connect":
		verb = "CONNECT"
	case "fetch":
		verb = "WebFetch"
	}
	s := strings.TrimSpace(fmt.Sprintf("%s %s:%d", verb, n.Host, n.Port))
	if n.Addr != "" {
		s += " via " + n.Addr
	}
	return s
}

// networkResult is the RESULT column of a connection.
func networkResult(r audit.Record) string {
	res := "ok"
	if r.Decision != "allow" {
		res = r.Reason
	}
	res += fmt.Sprintf(", out %d B, in %d B", r.Network.BytesOut, r.Network.BytesIn)
	if r.Network.LargeUpload {
		res += ", LARGE UPLOAD"
	}
	return res
}

// openAudit opens the audit log of the configured workspace.
func openAudit(a *app) (*audit.Log, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	return audit.Open(workspace.AuditPath(cfg))
}
