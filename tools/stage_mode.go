package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools/permission"
)

// ModeStage turns the rule match, the verdict, grants and the mode into
// allow, ask or deny. A deny ends the call with a result that says what
// was refused and why; allow and ask go on (ask to the approval stage).
func ModeStage(mode permission.Mode, workspace string, grants GrantStore) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			pc := permissionCall(c)
			in := permission.Input{
				Mode:        mode,
				Match:       c.Match,
				Kind:        string(c.Tool.Kind()),
				InWorkspace: allWithin(pc.Paths, workspace),
				Granted:     granted(c, pc, grants),
			}
			if c.Verdict != nil {
				in.Class = c.Verdict.Class
				in.ReadOnly = c.Verdict.Class == ClassReadOnly
			} else {
				in.ReadOnly = c.Tool.ReadOnly(c.Params)
			}
			out := permission.Decide(in)
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

func allWithin(paths []string, dir string) bool {
	for _, p := range paths {
		if !config.Within(p, dir) {
			return false
		}
	}
	return true
}

func granted(c *Call, pc permission.Call, store GrantStore) bool {
	var all []Grant
	if c.Session != nil {
		all = append(all, c.Session.Grants()...)
	}
	if store != nil {
		all = append(all, store.List()...)
	}
	for _, g := range all {
		if (permission.Grant{Tool: g.Tool, Prefix: g.Prefix}).Covers(pc) {
			return true
		}
	}
	return false
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
