package tools

import (
	"context"
	"sort"
	"strings"
)

// Lookup resolves the call's tool by name or alias.
func Lookup(reg *Registry) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			t, ok := reg.Lookup(c.Name)
			if !ok {
				var names []string
				for _, t := range reg.List() {
					names = append(names, t.Name())
				}
				sort.Strings(names)
				return Fail(ErrNotFound, "there is no tool named %q; the tools are: %s", c.Name, strings.Join(names, ", "))
			}
			c.Tool = t
			return next(ctx, c)
		}
	}
}

// DecodeStage decodes the input strictly into the tool's params.
func DecodeStage(maxInput int) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			if len(c.Input) > maxInput {
				return Fail(ErrValidation, "the input is %d bytes, more than the %d allowed (tools.max_input_bytes); split the work into smaller calls", len(c.Input), maxInput)
			}
			p := c.Tool.NewParams()
			if err := Decode(c.Input, p); err != nil {
				// The message names the tool; content and error say the
				// same, so a front end printing both does not repeat it.
				te := AsToolError(err)
				te.Message += " (tool " + c.Tool.Name() + ")"
				return Result{Content: te.Message, Display: string(te.Kind), Err: te}
			}
			if m, ok := p.(*map[string]any); ok && *m != nil {
				coerceBySchema(c.Tool.Schema(), *m)
			}
			c.Params = p
			c.Command, c.HasCommand = commandOf(p)
			return next(ctx, c)
		}
	}
}
