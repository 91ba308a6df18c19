package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/tools/permission"
)

// ApprovalStage asks the approver about calls the mode stage marked "ask".
// For a command, "always allow" is offered per simple command that no
// allow rule or grant covers yet (rs.Cover), keyed by the argv prefix the
// classifier offered for it; for other tools, the whole tool. The answer
// becomes one grant per chosen prefix, in the session or the project
// grant store. Without an answer (ctx done, approver error) the call is
// refused with needs_approval.
//
// A refusal says who refused and, when no person did, exactly what would
// allow the call (see allowHints); text a person typed when refusing
// ([Approval].Feedback) is passed on as theirs, and only that.
func ApprovalStage(ap Approver, store GrantStore, rs permission.Rules, pctx permission.Context, now func() time.Time) Stage {
	workspace := pctx.Workspace
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if c.Decision.Action != permission.Ask {
				return next(ctx, c)
			}
			req := ApprovalRequest{
				CallID:  c.ID,
				Session: c.Session.ID,
				Tool:    c.Tool.Name(),
				Input:   c.Input,
				Summary: approvalSummary(c),
				Reason:  c.Decision.Reason,
				Verdict: c.Verdict,
			}
			// An ask rule beats every grant: "always allow" would not
			// stop the next question, so it is not offered.
			if c.Verdict != nil && c.Decision.By != "rule" {
				req.Prefixes = offeredPrefixes(rs.Cover(pctx, permissionCall(c), grantsOf(c, store)))
			}
			askedBy := c.Decision.By // what made the call ask: rule, classifier, mode, protected
			ans, err := approverOf(c, ap).Approve(ctx, req)
			if err != nil {
				c.Decision.Action = permission.Deny
				c.Decision.By = "approver"
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return Fail(ErrNeedsApproval, "this %s call needs a person's approval (%s) and none came before the call was cancelled: %s", c.Tool.Name(), c.Decision.Reason, summarize(c))
				}
				return Fail(ErrNeedsApproval, "this %s call needs a person's approval (%s) and none could be asked: %s.%s", c.Tool.Name(), c.Decision.Reason, summarize(c), allowHints(c, req.Prefixes, askedBy, workspace))
			}
			c.Decision.By = ans.By
			if !ans.Allow {
				c.Decision.Action = permission.Deny
				return refuseAfterApproval(c, req, ans, askedBy, workspace)
			}
			c.Decision.Action = permission.Allow
			if ans.Remember != GrantOnce {
				for _, g := range chosenGrants(c, req, ans, now()) {
					switch ans.Remember {
					case GrantSession:
						c.Session.AddGrant(g)
					case GrantProject:
						if store != nil {
							if err := store.Add(g); err != nil {
								c.Session.AddGrant(g)
							}
						}
					}
				}
			}
			return next(ctx, c)
		}
	}
}

// offeredPrefixes are the distinct grant prefixes of the parts nothing
// covers yet, in order.
func offeredPrefixes(cv permission.Coverage) [][]string {
	var out [][]string
	for _, p := range cv.Uncovered {
		if len(p.Prefix) > 0 && !slices.ContainsFunc(out, func(q []string) bool { return slices.Equal(q, p.Prefix) }) {
			out = append(out, p.Prefix)
		}
	}
	return out
}

// chosenGrants are the grants an "always allow" answer adds: the whole
// tool for a tool without a command; for a command, one per prefix the
// person chose among those offered (all offered ones when the answer
// names none). A command without an offered prefix gets none: a grant
// without a prefix would allow every command.
func chosenGrants(c *Call, req ApprovalRequest, ans Approval, at time.Time) []Grant {
	g := Grant{Tool: c.Tool.Name(), Scope: ans.Remember, At: at, By: ans.By}
	if !c.HasCommand {
		return []Grant{g}
	}
	var out []Grant
	for _, p := range req.Prefixes {
		if ans.Prefixes != nil && !slices.ContainsFunc(ans.Prefixes, func(q []string) bool { return slices.Equal(q, p) }) {
			continue
		}
		pg := g
		pg.Prefix = p
		out = append(out, pg)
	}
	return out
}

// refuseAfterApproval is the result of a call the approver did not allow.
func refuseAfterApproval(c *Call, req ApprovalRequest, ans Approval, askedBy, workspace string) Result {
	var b strings.Builder
	kind := ErrPermissionDenied
	asked := ans.By != "non-interactive" && ans.By != ""
	switch {
	case !asked:
		kind = ErrNeedsApproval
		fmt.Fprintf(&b, "this %s call needs approval (%s) and nobody could be asked, so it was refused: %s.", c.Tool.Name(), c.Decision.Reason, summarize(c))
	case ans.Unanswered:
		kind = ErrNeedsApproval
		fmt.Fprintf(&b, "this %s call needs approval (%s) and nobody answered in time, so it was refused: %s.", c.Tool.Name(), c.Decision.Reason, summarize(c))
	default:
		fmt.Fprintf(&b, "a person refused this %s call (%s): %s.", c.Tool.Name(), c.Decision.Reason, summarize(c))
	}
	if ans.Message != "" {
		b.WriteString(" ")
		b.WriteString(ans.Message)
	}
	if fb := strings.TrimSpace(ans.Feedback); fb != "" && asked && !ans.Unanswered {
		fmt.Fprintf(&b, "\nThe person who refused it wrote: %q", oneLine(fb, 2000))
	}
	if !asked || ans.Unanswered {
		b.WriteString(allowHints(c, req.Prefixes, askedBy, workspace))
		b.WriteString("\nDo not retry the same call: use a read-only alternative, or tell the user which of these would allow it.")
	}
	return Fail(kind, "%s", b.String())
}

// allowHints says exactly which setting or command would allow a call
// that needed approval: the grant command, the allow rule and the mode
// that cover it, or why none can. askedBy is what made the call ask
// (Decision.By before the approver). It begins with a newline ("" when there
// is nothing to say).
func allowHints(c *Call, prefixes [][]string, askedBy, workspace string) string {
	var b strings.Builder
	const userConfig = "the user config (~/.config/agentbox/config.yaml, or AGENTBOX_TOOLS_ALLOW; a project's .agentbox/config.yaml cannot allow)"
	grantCmd := func(rules string) string {
		return fmt.Sprintf("agentbox --workspace %s grants add %s", shellQuote(workspace), rules)
	}
	name := c.Tool.Name()
	isCmd := c.HasCommand
	b.WriteString("\nWhat would allow it (a person must do one of these):")
	switch {
	case askedBy == "protected":
		rule := name
		if len(c.Paths) > 0 {
			rule = name + "(" + ruleFor(workspace, c.Paths[0]) + ")"
		}
		fmt.Fprintf(&b, "\n- add the allow rule %s to tools.allow in %s;", rule, userConfig)
		b.WriteString("\n- or approve it when asked: run it where a person can answer (see above).")
		return b.String()
	case askedBy == "rule" && c.Match.List == "secrets":
		fmt.Fprintf(&b, "\n- remove %s from tools.secrets in %s: it guards a secret file for every tool (no allow rule or grant overrides it);", strings.TrimSuffix(strings.TrimPrefix(c.Decision.Rule, "Read("), ")"), userConfig)
	case askedBy == "rule" && c.Match.List == "deny":
		fmt.Fprintf(&b, "\n- name the files it reads literally: a path known only at run time may be one the deny rule %s refuses;", c.Decision.Rule)
	case askedBy == "rule" && c.Decision.Rule != "":
		fmt.Fprintf(&b, "\n- remove the ask rule %s from tools.ask (no allow rule or grant overrides an ask rule);", c.Decision.Rule)
	case isCmd && len(prefixes) > 0:
		rules := make([]string, len(prefixes))
		for i, p := range prefixes {
			rules[i] = GrantRule(Grant{Tool: name, Prefix: p})
		}
		if len(prefixes) == 1 {
			fmt.Fprintf(&b, "\n- grant it for this workspace: `%s` (commands starting with %q);", grantCmd(shellQuote(rules[0])), strings.Join(prefixes[0], " "))
			fmt.Fprintf(&b, "\n- or add the allow rule %s to tools.allow in %s;", rules[0], userConfig)
			break
		}
		fmt.Fprintf(&b, "\n- grant each part of it that is not allowed yet for this workspace: `%s`;", grantCmd(strings.Join(quoted(rules), " ")))
		fmt.Fprintf(&b, "\n- or add the allow rules %s to tools.allow in %s;", strings.Join(rules, ", "), userConfig)
	case isCmd:
		b.WriteString("\n- no rule or grant can cover this command: the classifier could not break it into simple commands with a safe prefix to allow (substitutions, variables, eval, loops, functions and wrappers are never covered); a person can run it themselves;")
	default:
		fmt.Fprintf(&b, "\n- grant it for this workspace: `%s` (every %s call);", grantCmd(shellQuote(name)), name)
		fmt.Fprintf(&b, "\n- or add the allow rule %s to tools.allow in %s;", name, userConfig)
	}
	b.WriteString("\n- or use the mode bypassPermissions (`--mode bypassPermissions` on the agentbox command line, or tools.mode in the user config): everything not forbidden runs, still in the sandbox.")
	return b.String()
}

// quoted is each of words shellQuoted.
func quoted(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellQuote(w)
	}
	return out
}

// shellQuote quotes s for a POSIX shell (single quotes) unless it is made
// only of characters that need none.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// summarize is a one-line description of a call for a person.
func summarize(c *Call) string {
	if c.HasCommand {
		return c.Tool.Name() + ": " + oneLine(c.Command, 200)
	}
	if len(c.Paths) > 0 {
		return c.Tool.Name() + " " + strings.Join(c.Paths, ", ")
	}
	return c.Tool.Name() + " " + oneLine(string(c.Input), 200)
}

// approvalSummary is what a person approving c is shown: like summarize,
// but a command is shown whole and exactly as it will run (no cut, no
// whitespace folded), so that nothing after a long comment or a newline
// escapes the person's eyes. Every surface escapes it (termtext.Line).
func approvalSummary(c *Call) string {
	if c.HasCommand {
		return c.Tool.Name() + ": " + c.Command
	}
	return summarize(c)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// approverOf is who is asked about c: the call's own approver (one
// person per front-end session), else ap.
func approverOf(c *Call, ap Approver) Approver {
	if c.Approver != nil {
		return c.Approver
	}
	return ap
}
