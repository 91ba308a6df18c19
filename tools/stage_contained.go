package tools

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/tools/permission"
)

// ContainedNote tells the model, at the end of the result of a command
// that ran without asking because it was contained
// ([permission.ByContained]), that it did and how to undo what it changed:
// the Undo tool when hasUndo says the model has one, `agentbox undo ID`
// always; the audit record's reason names the undo too. Other calls pass
// through untouched.
func ContainedNote(hasUndo func() bool) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			res := next(ctx, c)
			if c.Decision.By != permission.ByContained {
				return res
			}
			res.SetMeta("auto_allowed", "contained")
			const ran = "\n\n(agentbox ran this without asking: it stayed in the sandbox"
			switch {
			case c.Detached.Taken():
				res.Content += ran + " and its changes are journaled when it ends, so they can be undone.)"
			case c.Journal != nil && c.Journal.ID != "" && len(c.Journal.Changes) > 0:
				id := c.Journal.ID
				if hasUndo != nil && hasUndo() {
					res.Content += fmt.Sprintf("%s. Undo its changes with the Undo tool, call_id %q, or `agentbox undo %s`.)", ran, id, id)
				} else {
					res.Content += fmt.Sprintf("%s. A person can undo its changes with `agentbox undo %s`.)", ran, id)
				}
				c.Decision.Reason += fmt.Sprintf("; undo with `agentbox undo %s`", id)
			case res.Err == nil || !refusedBeforeActing(res.Err.Kind):
				res.Content += ran + " and left no changes to undo.)"
			}
			return res
		}
	}
}
