package tools

import (
	"context"

	"github.com/agentbox/agentbox/tools/permission"
)

// permissionCall describes a call for rule matching.
func permissionCall(c *Call) permission.Call {
	pc := permission.Call{
		Tool:    c.Tool.Name(),
		Aliases: c.Tool.Aliases(),
		Kind:    string(c.Tool.Kind()),
		Paths:   c.Paths,
	}
	if c.HasCommand {
		pc.HasCommand = true
		if c.Verdict != nil {
			pc.Commands = c.Verdict.Commands
			pc.Reads = c.Verdict.Reads
			for _, p := range c.Verdict.Parts {
				pc.Parts = append(pc.Parts, permission.Part{Argv: p.Argv, Class: p.Class, Prefix: p.Prefix})
			}
		}
		if c.Session != nil {
			pc.Dir = c.Session.Cwd()
		}
	}
	return pc
}

// Rules matches the permission rules (deny → ask → allow) and records
// the match on the call; the mode stage decides.
func Rules(rs permission.Rules, pctx permission.Context) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			c.Match = rs.Evaluate(pctx, permissionCall(c))
			return next(ctx, c)
		}
	}
}
