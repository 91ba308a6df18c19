package tools

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Recover turns a panic anywhere below it into an internal error result;
// the stack goes to the log, never to the model.
func Recover(logger *slog.Logger) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (res Result) {
			defer func() {
				if v := recover(); v != nil {
					logger.Error("tool panicked", "tool", c.Name, "call", c.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					res = Fail(ErrInternal, "the %s tool crashed while running this call; nothing more is known. Try a different approach", c.Name)
				}
			}()
			return next(ctx, c)
		}
	}
}
