package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/permission"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/agentbox/agentbox/tools/workspace"
)

func init() { register(newGrantsCmd) }

// grantJSON is one row of `agentbox grants list --json`.
type grantJSON struct {
	ID      string           `json:"id"`
	Scope   tools.GrantScope `json:"scope"`
	Session string           `json:"session,omitempty"`
	Rule    string           `json:"rule"`
	Tool    string           `json:"tool"`
	Prefix  []string         `json:"prefix,omitempty"`
	At      time.Time        `json:"at"`
	By      string           `json:"by,omitempty"`
}

// grantStores are a workspace's grant files: the project grants and the
// saved CLI sessions.
type grantStores struct {
	project  *tools.GrantFile
	sessions *tools.SessionStore
}

func openGrantStores(cfg *config.Config) grantStores {
	return grantStores{
		project:  tools.NewGrantFile(workspace.GrantsPath(cfg)),
		sessions: tools.NewSessionStore(workspace.SessionsDir(cfg), cfg.Workspace),
	}
}

// list returns every grant, project ones first, each with its id.
func (st grantStores) list() ([]grantJSON, error) {
	var out []grantJSON
	row := func(g tools.Grant, session string) grantJSON {
		return grantJSON{ID: tools.GrantID(g, session), Scope: g.Scope, Session: session, Rule: tools.GrantRule(g), Tool: g.Tool, Prefix: g.Prefix, At: g.At, By: g.By}
	}
	for _, g := range st.project.List() {
		g.Scope = tools.GrantProject
		out = append(out, row(g, ""))
	}
	ids, err := st.sessions.List()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	for _, id := range ids {
		s, err := st.sessions.Load(id)
		if err != nil {
			return nil, err
		}
		for _, g := range s.Grants() {
			g.Scope = tools.GrantSession
			out = append(out, row(g, id))
		}
	}
	return out, nil
}

func newGrantsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grants",
		Short: `List, add and revoke "always allow" grants of the workspace`,
		Long: `A grant lets calls run without asking: a Bash grant covers commands whose
every simple command starts with its argv prefix (the classifier's
normalized argv, never the raw string), a grant of another tool covers every
call of that tool. Project grants cover every session of the workspace;
session grants one saved CLI session (agentbox tool --session). Grants never
lift a forbidden verdict, a deny rule or an ask rule.

Grants are kept under the workspace's state directory, outside the
workspace. The session grants of a running "agentbox mcp" live in that
process until it ends and are not listed here.`,
	}
	cmd.AddCommand(newGrantsListCmd(a), newGrantsAddCmd(a), newGrantsRevokeCmd(a))
	return cmd
}

func newGrantsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list [--json]",
		Short: "List the workspace's grants with their ids",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			rows, err := openGrantStores(cfg).list()
			if err != nil {
				return err
			}
			if a.jsonOut {
				if rows == nil {
					rows = []grantJSON{}
				}
				enc := json.NewEncoder(jsonWriter{a.stdout()})
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.stderr(), "agentbox: no grants for %s\n", termtext.Line(cfg.Workspace))
				return nil
			}
			w := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSCOPE\tRULE\tGRANTED\tBY")
			for _, r := range rows {
				scope := string(r.Scope)
				if r.Session != "" {
					scope += " " + r.Session
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, termtext.Line(scope), termtext.Line(r.Rule), r.At.Local().Format(time.DateTime), termtext.Line(r.By))
			}
			return w.Flush()
		},
	}
}

// grantFromRule turns a rule in Claude Code's syntax into a grant: a Bash
// rule must be a prefix (`Bash(npm test:*)`), another tool's rule the
// tool alone.
func grantFromRule(s string) (tools.Grant, error) {
	r, err := permission.Parse(s)
	if err != nil {
		return tools.Grant{}, err
	}
	g := tools.Grant{Tool: r.Tool}
	if words, ok := r.CommandPrefix(); ok {
		g.Prefix = words
		return g, nil
	}
	if r.Tool == "Bash" {
		return tools.Grant{}, fmt.Errorf("%q: a Bash grant needs a command prefix such as 'Bash(npm test:*)' (a grant of every command is what --mode bypassPermissions is for)", s)
	}
	if r.Spec != "" {
		return tools.Grant{}, fmt.Errorf("%q: a grant covers a whole tool (%s) or a Bash command prefix; for paths add an allow rule to tools.allow in the user config", s, r.Tool)
	}
	return g, nil
}

func newGrantsAddCmd(a *app) *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:   "add RULE... [--session ID]",
		Short: "Grant rules ('Bash(npm test:*)' or a tool name) for the project or one CLI session",
		Long: `add grants each RULE without asking from now on: for every session of the
workspace (a project grant), or with --session for that saved CLI session
only. RULE is 'Bash(PREFIX:*)' (quote it for the shell) or a tool name
(Write, Edit, ...). A compound command is allowed when each of its simple
commands is: grant one rule per part. Refusals of calls that needed
approval print the exact command to run. Every rule is checked before any
is granted. With --json, one object per grant, one per line.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			gs := make([]tools.Grant, 0, len(args))
			for _, rule := range args {
				g, err := grantFromRule(rule)
				if err != nil {
					return err
				}
				g.At, g.By = time.Now().UTC(), "cli"
				gs = append(gs, g)
			}
			st := openGrantStores(cfg)
			var s *tools.Session
			if session != "" {
				if s, err = st.sessions.Load(session); err != nil {
					return err
				}
			}
			ids := make([]string, len(gs))
			for i := range gs {
				g := &gs[i]
				if s == nil {
					g.Scope = tools.GrantProject
					if err := st.project.Add(*g); err != nil {
						return err
					}
					ids[i] = tools.GrantID(*g, "")
				} else {
					g.Scope = tools.GrantSession
					s.AddGrant(*g)
					ids[i] = tools.GrantID(*g, session)
				}
			}
			if s != nil {
				if err := st.sessions.Save(s); err != nil {
					return err
				}
			}
			for i, g := range gs {
				if a.jsonOut {
					if err := json.NewEncoder(jsonWriter{a.stdout()}).Encode(grantJSON{ID: ids[i], Scope: g.Scope, Session: session, Rule: tools.GrantRule(g), Tool: g.Tool, Prefix: g.Prefix, At: g.At, By: g.By}); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(a.stdout(), "%s\t%s %s\n", ids[i], g.Scope, termtext.Line(tools.GrantRule(g)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "grant for this saved CLI session only (default: the whole project)")
	return cmd
}

func newGrantsRevokeCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke ID... | --all",
		Short: "Revoke grants by id (see grants list), or all of them",
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errors.New("name grant ids (from `agentbox grants list`) or --all, not both")
			}
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			st := openGrantStores(cfg)
			want := map[string]bool{}
			for _, id := range args {
				want[id] = true
			}
			var revoked []grantJSON
			note := func(g tools.Grant, session string) {
				revoked = append(revoked, grantJSON{ID: tools.GrantID(g, session), Scope: g.Scope, Session: session, Rule: tools.GrantRule(g), Tool: g.Tool, Prefix: g.Prefix, At: g.At, By: g.By})
			}
			gone, err := st.project.Remove(func(g tools.Grant) bool {
				g.Scope = tools.GrantProject
				return all || want[tools.GrantID(g, "")]
			})
			if err != nil {
				return err
			}
			for _, g := range gone {
				g.Scope = tools.GrantProject
				note(g, "")
			}
			ids, err := st.sessions.List()
			if err != nil {
				return err
			}
			slices.Sort(ids)
			for _, sid := range ids {
				s, err := st.sessions.Load(sid)
				if err != nil {
					return err
				}
				gone := s.RemoveGrants(func(g tools.Grant) bool {
					g.Scope = tools.GrantSession
					return all || want[tools.GrantID(g, sid)]
				})
				if len(gone) == 0 {
					continue
				}
				if err := st.sessions.Save(s); err != nil {
					return err
				}
				for _, g := range gone {
					g.Scope = tools.GrantSession
					note(g, sid)
				}
			}
			var missing []string
			for _, id := range args {
				if !slices.ContainsFunc(revoked, func(r grantJSON) bool { return r.ID == id }) {
					missing = append(missing, id)
				}
			}
			if a.jsonOut {
				if revoked == nil {
					revoked = []grantJSON{}
				}
				if err := json.NewEncoder(jsonWriter{a.stdout()}).Encode(revoked); err != nil {
					return err
				}
			} else {
				for _, r := range revoked {
					fmt.Fprintf(a.stdout(), "revoked %s\t%s %s\n", r.ID, r.Scope, termtext.Line(r.Rule))
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("no grant with id %s (see `agentbox grants list`)", termtext.Line(strings.Join(missing, ", ")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "revoke every grant of the workspace")
	return cmd
}
