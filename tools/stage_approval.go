package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/tools/permission"
)

// ApprovalStage asks the approver about calls the mode stage marked "ask".
// "Always allow" answers become grants keyed by the classifier's offered
// argv prefix (Bash) or the whole tool (others), in the session or the
// project grant store. Without an answer (ctx done, approver error) the
// call is refused with needs_approval.
func ApprovalStage(ap Approver, store GrantStore, now func() time.Time) Stage {
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
				Summary: Summarize(c),
				Reason:  c.Decision.Reason,
				Verdict: c.Verdict,
			}
			if c.Verdict != nil {
				req.Prefix = c.Verdict.Prefix
			}
			ans, err := ap.Approve(ctx, req)
			if err != nil {
				c.Decision.Action = permission.Deny
				c.Decision.By = "approver"
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return Fail(ErrNeedsApproval, "this %s call needs a person's approval (%s) and none came before the call was cancelled: %s", c.Tool.Name(), c.Decision.Reason, req.Summary)
				}
				return Fail(ErrNeedsApproval, "this %s call needs a person's approval (%s) and none could be asked: %s", c.Tool.Name(), c.Decision.Reason, req.Summary)
			}
			c.Decision.By = ans.By
			if !ans.Allow {
				c.Decision.Action = permission.Deny
				msg := fmt.Sprintf("a person refused this %s call (%s): %s", c.Tool.Name(), c.Decision.Reason, req.Summary)
				kind := ErrPermissionDenied
				if ans.By == "non-interactive" || ans.By == "" {
					kind = ErrNeedsApproval
					msg = fmt.Sprintf("this %s call needs approval (%s) and agentbox runs non-interactively, so it was refused: %s. Use a read-only alternative or ask the user to allow it", c.Tool.Name(), c.Decision.Reason, req.Summary)
				}
				if ans.Message != "" {
					msg += ". They said: " + ans.Message
				}
				return Fail(kind, "%s", msg)
			}
			c.Decision.Action = permission.Allow
			if ans.Remember != GrantOnce {
				g := Grant{Tool: c.Tool.Name(), Scope: ans.Remember, At: now(), By: ans.By}
				if c.Verdict != nil {
					g.Prefix = c.Verdict.Prefix
				}
				// A command tool without an offered prefix cannot be
				// remembered: the grant would allow every command.
				if _, hasCmd := CommandOf(c.Params); !hasCmd || len(g.Prefix) > 0 {
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

// Summarize is a one-line description of a call for a person.
func Summarize(c *Call) string {
	if cmd, ok := CommandOf(c.Params); ok {
		return c.Tool.Name() + ": " + oneLine(cmd, 200)
	}
	if paths := PathsOf(c.Params); len(paths) > 0 {
		return c.Tool.Name() + " " + strings.Join(paths, ", ")
	}
	return c.Tool.Name() + " " + oneLine(string(c.Input), 200)
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
