package tools

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbox/agentbox/tools/audit"
)

// AuditStage is the outermost stage: after the call, whatever happened,
// it appends one record to log (nil: no audit). An audit failure is
// logged and turns a successful result into an internal error: a call
// that cannot be audited must not look like it went through unnoticed.
func AuditStage(log AuditLog, now func() time.Time, logger *slog.Logger) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			res := next(ctx, c)
			if log == nil {
				return res
			}
			rec := recordFor(c, res, now())
			// The record is written even when ctx is done: use a context
			// that keeps ctx's values but not its cancellation.
			if err := log.Append(context.WithoutCancel(ctx), rec); err != nil {
				logger.Error("audit append failed", "call", c.ID, "err", err)
				if res.Err == nil {
					res.Err = Errorf(ErrInternal, "the call ran but could not be written to the audit log")
				}
			}
			return res
		}
	}
}

// recordFor builds the audit record of a finished call.
func recordFor(c *Call, res Result, end time.Time) audit.Record {
	r := audit.Record{
		Time:       c.Started.UTC(),
		CallID:     c.ID,
		Tool:       c.Name,
		Input:      audit.MaskInput(c.Input),
		DurationMS: end.Sub(c.Started).Milliseconds(),
	}
	if c.Session != nil {
		r.Session = c.Session.ID
	}
	if c.Tool != nil {
		r.Tool = c.Tool.Name()
	}
	if v := c.Verdict; v != nil {
		av := &audit.Verdict{Class: v.Class}
		for _, x := range v.Reasons {
			av.Reasons = append(av.Reasons, audit.Reason{Rule: x.Rule, Text: audit.MaskString(x.Text), Offset: x.Offset, Message: x.Message})
		}
		r.Verdict = av
	}
	r.Decision = string(c.Decision.Action)
	r.DecidedBy = c.Decision.By
	r.Reason = c.Decision.Reason
	r.Rule = c.Decision.Rule
	if id, ok := res.Meta["container_id"].(string); ok {
		r.ContainerID = id
	}
	if code, ok := intMeta(res.Meta["exit_code"]); ok {
		r.ExitCode = &code
	}
	if c.Journal != nil {
		r.JournalID = c.Journal.ID
		for _, ch := range c.Journal.Changes {
			r.Changed = append(r.Changed, ch.Path)
		}
	}
	if res.Err != nil {
		r.ErrorKind = string(res.Err.Kind)
		r.Error = audit.MaskString(res.Err.Message)
	}
	return r
}

func intMeta(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		return int(x), true
	}
	return 0, false
}
