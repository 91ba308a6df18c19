package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
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
	// Summary says what the call would do; for a command tool it is the
	// whole command, never cut (surfaces escape it with termtext.Line).
	Summary string `json:"summary"`
	// Reason says why approval is needed (rule, verdict, mode).
	Reason  string   `json:"reason"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Prefixes are the argv prefixes an "always allow" of a command would
	// grant: one per simple command of it that no rule or grant covers
	// yet and for which the classifier offered one. Nil when none can be
	// offered: then only this call can be allowed (a tool without a
	// command, Verdict nil, is always allowed as a whole).
	Prefixes [][]string `json:"prefixes,omitempty"`
}

// OffersGrant reports whether "always allow" can be offered: a command
// only with a prefix to key the grant by, any other tool as a whole.
func (r ApprovalRequest) OffersGrant() bool {
	return len(r.Prefixes) > 0 || r.Verdict == nil
}

// Approval is a person's answer.
type Approval struct {
	Allow bool
	// Remember asks for grants of this scope (only with Allow): one per
	// prefix in Prefixes, or per offered prefix when Prefixes is nil.
	Remember GrantScope
	// Prefixes are the offered prefixes (ApprovalRequest.Prefixes) the
	// person chose to always allow; nil: all of them. A prefix that was
	// not offered is ignored.
	Prefixes [][]string
	// By names who decided ("tty", "mcp-elicitation", "policy", ...).
	By string
	// Message is agentbox's own text for the model with a refusal: why
	// nobody could be asked, what would have allowed the call. Never text
	// a person typed.
	Message string
	// Feedback is what the person who refused typed for the model ("use
	// npm test instead"); empty when nobody typed anything. Only an
	// approver that read it from a human sets it.
	Feedback string
	// Unanswered marks a refusal because a person could have been asked
	// but did not answer in time.
	Unanswered bool
}

// Approver asks a person. It must honour ctx (return ctx.Err() when it is
// done). Front ends provide one: a TTY prompt for the CLI, MCP
// elicitation for the server. Implementations must be safe for
// concurrent use.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to [Approver].
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

// GrantID is a grant's stable id: the same tool, prefix and scope (and,
// for a session grant, the same session) always give the same id, so a
// listed id can be revoked later by another process.
func GrantID(g Grant, session string) string {
	h := sha256.New()
	scope := g.Scope
	if scope == GrantOnce {
		scope = GrantSession
	}
	if scope != GrantSession {
		session = ""
	}
	for _, part := range append([]string{string(scope), session, g.Tool}, g.Prefix...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "g" + hex.EncodeToString(h.Sum(nil))[:12]
}

// GrantRule is the grant written as a permission rule in Claude Code's
// syntax: "Bash(npm test:*)" for a command prefix, the tool name alone
// otherwise. permission.Parse reads it back to the same prefix.
func GrantRule(g Grant) string {
	if len(g.Prefix) == 0 {
		return g.Tool
	}
	return g.Tool + "(" + quoteWords(g.Prefix) + ":*)"
}

// quoteWords joins argv words so that the permission rule parser splits
// them back into the same words: a word with blanks, quotes, backslashes,
// glob characters or a colon is single-quoted.
func quoteWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\*?[]():") {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}
