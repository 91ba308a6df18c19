package tools

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/tools/permission"
)

// ContainedNote tells the model, at the end of the result of a command
// that ran without asking because it was contained
// (permission.ByContained), that it did and how to undo what it changed;
// the audit record's reason names the journal entry too. Other calls pass
// through untouched.
func ContainedNote() Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			res := next(ctx, c)
			if c.Decision.By != permission.ByContained {
				return res
			}
			res.SetMeta("auto_allowed", "contained")
			switch {
			case c.Detached.Taken():
				res.Content += "\n\n(agentbox ran this without asking: it stays in the sandbox and its changes are journaled when it ends; History and Undo can revert them.)"
			case c.Journal != nil && c.Journal.ID != "" && len(c.Journal.Changes) > 0:
				id := c.Journal.ID
				res.Content += fmt.Sprintf("\n\n(agentbox ran this without asking: it stayed in the sandbox. Undo its changes with the Undo tool, call_id %q, or `agentbox undo %s`.)", id, id)
				c.Decision.Reason += fmt.Sprintf("; undo with `agentbox undo %s`", id)
			case res.Err == nil || !refusedBeforeActing(res.Err.Kind):
				res.Content += "\n\n(agentbox ran this without asking: it stayed in the sandbox and changed no files.)"
			}
			return res
		}
	}
}
