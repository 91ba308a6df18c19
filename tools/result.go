package tools

import (
	"errors"
	"fmt"
)

// ErrorKind is the model-facing category of a failed call. The strings are
// part of the public contract (JSON output, MCP results, audit records).
type ErrorKind string

const (
	ErrValidation       ErrorKind = "validation"        // bad input: wrong type, unknown field, bad path
	ErrNotFound         ErrorKind = "not_found"         // unknown tool, missing file
	ErrPermissionDenied ErrorKind = "permission_denied" // a rule, the mode or a person said no
	ErrNeedsApproval    ErrorKind = "needs_approval"    // would need a person and none could be asked
	ErrForbidden        ErrorKind = "forbidden"         // the classifier judged it forbidden
	ErrConflict         ErrorKind = "conflict"          // stale file (read it again), undo conflict
	ErrTimeout          ErrorKind = "timeout"           // the call ran out of time
	ErrExecution        ErrorKind = "execution"         // the command or operation itself failed
	ErrInternal         ErrorKind = "internal"          // agentbox failed (panic, broken sandbox, ...)
)

// ToolError is a failure the model can act on. Message is written for the
// model: it says what was refused or failed and, where possible, what to do
// instead. It never carries Go internals by accident.
type ToolError struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
}

func (e *ToolError) Error() string { return string(e.Kind) + ": " + e.Message }

// Errorf builds a *[ToolError]. A tool may return it as its error from Run,
// or put it in [Result].Err; both reach the model the same way.
func Errorf(kind ErrorKind, format string, args ...any) *ToolError {
	return &ToolError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsToolError returns err's *[ToolError] if it wraps one, else an internal
// ToolError whose message is generic (the Go error is logged, not shown).
func AsToolError(err error) *ToolError {
	if err == nil {
		return nil
	}
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	return &ToolError{Kind: ErrInternal, Message: "agentbox failed to run this call; the operator's log has the details"}
}

// Image is image content returned to the model (Read of a png, ...).
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// Result is what a call returns. Content is the model-facing text, Display
// a short line for a person (a UI, the CLI). Err is non-nil when the call
// failed; Content may still carry useful output then (a failing command's
// output). Meta holds machine-readable facts (exit_code, changed paths,
// journal id, truncation counts, ...); keys are snake_case.
type Result struct {
	Content string         `json:"content"`
	Images  []Image        `json:"images,omitempty"`
	Display string         `json:"display"`
	Err     *ToolError     `json:"error"`
	Meta    map[string]any `json:"meta,omitempty"`
}

// IsError reports whether the call failed.
func (r Result) IsError() bool { return r.Err != nil }

// Fail returns a failed [Result] whose content repeats the message, so that
// front ends that only show Content still tell the model what happened.
func Fail(kind ErrorKind, format string, args ...any) Result {
	te := Errorf(kind, format, args...)
	return Result{Content: te.Message, Display: string(kind), Err: te}
}

// SetMeta sets one metadata key, allocating the map when needed.
func (r *Result) SetMeta(key string, v any) {
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	r.Meta[key] = v
}
