package tools

import (
	"context"
	"encoding/json"
	"time"
)

// GrantScope is how long an "always allow" lasts.
type GrantScope string

const (
	GrantOnce    GrantScope = ""        // this call only
	GrantSession GrantScope = "session" // the rest of the session
	GrantProject GrantScope = "project" // every session of this workspace
)

// Grant is an "always allow": calls of Tool whose every command's argv
// starts with Prefix (Bash), or any call of Tool when Prefix is empty and
// the tool has no command, run without asking.
type Grant struct {
	Tool   string     `json:"tool"`
	Prefix []string   `json:"prefix,omitempty"`
	Scope  GrantScope `json:"scope"`
	At     time.Time  `json:"at"`
	By     string     `json:"by,omitempty"`
}

// ApprovalRequest is what a person is asked about.
type ApprovalRequest struct {
	CallID  string          `json:"call_id"`
	Session string          `json:"session"`
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	// Summary is one line saying what the call would do.
	Summary string `json:"summary"`
	// Reason says why approval is needed (rule, verdict, mode).
	Reason  string   `json:"reason"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Prefix is the argv prefix an "always allow" would cover (nil when
	// the classifier offered none: then only this call can be allowed).
	Prefix []string `json:"prefix,omitempty"`
}

// Approval is a person's answer.
type Approval struct {
	Allow bool
	// Remember asks for a grant of this scope (only with Allow).
	Remember GrantScope
	// By names who decided ("tty", "mcp-elicitation", "policy", ...).
	By string
	// Message is passed to the model with a refusal ("use npm test").
	Message string
}

// Approver asks a person. It must honour ctx (return ctx.Err() when it is
// done). Front ends provide one: a TTY prompt for the CLI, MCP
// elicitation for the server. Implementations must be safe for
// concurrent use.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Approval, error)

func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// DenyApprover is the non-interactive default: it refuses everything.
type DenyApprover struct{}

func (DenyApprover) Approve(ctx context.Context, _ ApprovalRequest) (Approval, error) {
	if err := ctx.Err(); err != nil {
		return Approval{}, err
	}
	return Approval{Allow: false, By: "non-interactive"}, nil
}
