package tools

import (
	"context"
)

// ClassifyStage judges the command of tools that have an
// `agentbox:"command"` field and puts the verdict on the call. Without a
// classifier every command is dangerous (fail closed).
func ClassifyStage(classify ClassifyFunc) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if !c.HasCommand {
				return next(ctx, c)
			}
			var v Verdict
			if classify == nil {
				v = Verdict{Class: ClassDangerous, Reasons: []Reason{{Rule: "no-classifier", Message: "no classifier is configured"}}}
			} else {
				v = classify(ctx, c.Command)
			}
			switch v.Class {
			case ClassReadOnly, ClassDangerous, ClassForbidden:
			default:
				v.Class = ClassDangerous // unknown → dangerous
			}
			c.Verdict = &v
			return next(ctx, c)
		}
	}
}
