package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools/permission"
)

// ContainedFunc reports whether a command call judged dangerous stays
// inside the boundary if it runs: in the sandbox, with its changes
// journaled so that they can be undone (Pipeline.contained); when it does
// not, why not, in a few words for the model ("the sandbox is
// unavailable"). It is asked only when tools.auto_allow_sandboxed is on
// and nothing else decided.
type ContainedFunc func(ctx context.Context, c *Call) (ok bool, whyNot string)

// ModeStage turns the rule match, the verdict, grants and the mode into
// allow, ask or deny. Allow rules and grants together cover a command
// part by part ([permission.Rules.Cover]). A dangerous command that no rule
// or grant covers runs unasked in the default and acceptEdits modes when
// contained says it is contained (nil: never). A deny ends the call with
// a result that says what was refused and why; allow and ask go on (ask
// to the approval stage).
func ModeStage(mode permission.Mode, rs permission.Rules, pctx permission.Context, grants GrantStore, contained ContainedFunc) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			pc := permissionCall(c)
			whyNot := ""
			in := permission.Input{
				Mode:        mode,
				Match:       c.Match,
				Kind:        string(c.Tool.Kind()),
				InWorkspace: allWithin(pc.Paths, pctx.Workspace),
				Granted:     rs.Cover(pctx, pc, grantsOf(c, grants)).Covered(),
			}
			if c.Verdict != nil {
				in.Class = c.Verdict.Class
				in.ReadOnly = c.Verdict.Class == ClassReadOnly
			} else {
				in.ReadOnly = c.Tool.ReadOnly(c.Params)
			}
			// Only a command no rule matched: an ask rule (the secret-file
			// rules are ask rules) always asks.
			if contained != nil && in.Class == ClassDangerous && c.Match.Action == "" && !in.Granted &&
				(mode == permission.ModeDefault || mode == permission.ModeAcceptEdits) && !readsSecrets(c.Verdict) {
				in.Contained, whyNot = contained(ctx, c)
			}
			out := permission.Decide(in)
			if out.Action != permission.Allow && whyNot != "" {
				out.Reason += "; it did not run unasked because " + whyNot
			}
			c.Decision = Decision{Action: out.Action, By: out.By, Reason: out.Reason}
			if c.Match.Rule != nil {
				c.Decision.Rule = c.Match.Rule.Raw
			}
			if out.Action == permission.Deny {
				kind := ErrPermissionDenied
				if out.Forbidden {
					kind = ErrForbidden
				}
				return Fail(kind, "%s", refusal(c, out.Reason))
			}
			return next(ctx, c)
		}
	}
}

// readsSecrets reports whether the classifier found that the command may
// read a credential or secret file: its output would carry the secret out
// of the sandbox to the model, so such a command is never auto-allowed as
// contained.
func readsSecrets(v *Verdict) bool {
	if v == nil {
		return false
	}
	for _, r := range v.Reasons {
		if r.Rule == "read.secret" || r.Rule == "read.raw_disk" {
			return true
		}
	}
	return false
}

func allWithin(paths []string, dir string) bool {
	for _, p := range paths {
		if !config.Within(p, dir) {
			return false
		}
	}
	return true
}

// grantsOf lists the grants in force for c: its session's and the
// project's.
func grantsOf(c *Call, store GrantStore) []permission.Grant {
	var all []Grant
	if c.Session != nil {
		all = append(all, c.Session.Grants()...)
	}
	if store != nil {
		all = append(all, store.List()...)
	}
	out := make([]permission.Grant, 0, len(all))
	for _, g := range all {
		out = append(out, permission.Grant{Tool: g.Tool, Prefix: g.Prefix})
	}
	return out
}

// refusal is the model-facing text of a refused call.
func refusal(c *Call, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox refused this %s call: %s.", c.Tool.Name(), reason)
	if v := c.Verdict; v != nil && len(v.Reasons) > 0 {
		b.WriteString(" Why:")
		for _, r := range v.Reasons {
			if r.Text != "" {
				fmt.Fprintf(&b, "\n- %s (%q)", r.Message, r.Text)
			} else {
				fmt.Fprintf(&b, "\n- %s", r.Message)
			}
		}
	}
	b.WriteString("\nDo not retry the same call; use a different approach or ask the user to allow it.")
	return b.String()
}
