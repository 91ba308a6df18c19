package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/termtext"
)

// Decisions a person can pick in the elicitation form.
const (
	decisionAllowOnce   = "allow_once"
	decisionAlwaysAllow = "always_allow"
	decisionDeny        = "deny"

	fieldDecision = "decision"
)

// elicitor is the subset of *sdk.ServerSession the approver uses.
type elicitor interface {
	Elicit(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error)
	InitializeParams() *sdk.InitializeParams
}

// Approver implements tools.Approver for one MCP session: when the client
// declared the elicitation capability it asks the human through it (the
// command, its class and the reasons; one choice: allow once, always allow
// for this session (per part of a command not allowed yet), or deny); otherwise, or when elicitation is off
// or fails, it returns the configured non-interactive decision. Safe for
// concurrent use.
type Approver struct {
	session        elicitor
	elicit         bool
	nonInteractive bool // allow when nobody can be asked
	timeout        time.Duration
	tty            *TTYChannel // asked when the client cannot elicit; nil: off
}

// newApprover returns the approver for session. elicit turns elicitation
// on; allowNonInteractive is the decision when nobody can be asked (false:
// deny, the safe default); timeout bounds the wait for the human.
func newApprover(session *sdk.ServerSession, elicit, allowNonInteractive bool, timeout time.Duration) *Approver {
	return &Approver{session: session, elicit: elicit, nonInteractive: allowNonInteractive, timeout: timeout}
}

// WithTTY makes the approver ask on the terminal of c (mcp.approval_tty)
// when the client cannot elicit, before falling back to the
// non-interactive decision. A nil c turns it off. It returns a.
func (a *Approver) WithTTY(c *TTYChannel) *Approver {
	a.tty = c
	return a
}

// CanElicit reports whether the client declared form elicitation.
func (a *Approver) CanElicit() bool {
	if !a.elicit || a.session == nil {
		return false
	}
	p := a.session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	// A client that declares only URL elicitation cannot show a form.
	return e.Form != nil || e.URL == nil
}

// Approve asks the person, or applies the non-interactive decision.
func (a *Approver) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Approval, error) {
	if err := ctx.Err(); err != nil {
		return tools.Approval{}, err
	}
	if !a.CanElicit() {
		return a.noElicitation(ctx, req, "The MCP client cannot ask its user (it does not support elicitation)")
	}
	ectx, cancel := context.WithTimeoutCause(ctx, a.timeout, errApprovalTimeout)
	defer cancel()
	start := time.Now()
	res, err := a.session.Elicit(ectx, elicitParams(req))
	if err == nil && answeredByClient(res, time.Since(start)) {
		// Nobody saw the form: treat it as a client that cannot ask.
		return a.noElicitation(ctx, req, fmt.Sprintf(
			"The MCP client answered the approval request itself (%s, within %s and with no choice made), as headless runs such as `claude -p` and `codex exec` do, so no person saw it; run the client interactively to be asked",
			res.Action, time.Since(start).Round(time.Millisecond)))
	}
	if err != nil {
		if ctx.Err() != nil {
			return tools.Approval{}, ctx.Err()
		}
		if errors.Is(context.Cause(ectx), errApprovalTimeout) {
			return tools.Approval{Allow: false, By: "mcp-elicitation", Unanswered: true, Message: fmt.Sprintf(
				"Nobody answered the approval request within %s (mcp.approval_timeout).", a.timeout)}, nil
		}
		return a.noElicitation(ctx, req, "Asking the user through the MCP client failed")
	}
	return decide(req, res), nil
}

// noElicitation asks on the approval terminal when one is configured, and
// otherwise (or when it cannot be opened) applies the non-interactive
// decision.
func (a *Approver) noElicitation(ctx context.Context, req tools.ApprovalRequest, why string) (tools.Approval, error) {
	if a.tty == nil {
		return a.fallback(req, why), nil
	}
	tctx, cancel := context.WithTimeoutCause(ctx, a.timeout, errApprovalTimeout)
	defer cancel()
	ap, err := a.tty.Ask(tctx, req)
	if err == nil {
		return ap, nil
	}
	if ctx.Err() != nil {
		return tools.Approval{}, ctx.Err()
	}
	if errors.Is(context.Cause(tctx), errApprovalTimeout) {
		return tools.Approval{Allow: false, By: "tty", Unanswered: true, Message: fmt.Sprintf(
			"Nobody answered on the approval terminal within %s (mcp.approval_timeout).", a.timeout)}, nil
	}
	return a.fallback(req, why+", the approval terminal (mcp.approval_tty) could not be used"), nil
}

var errApprovalTimeout = errors.New("approval timed out")

// autoAnswerWindow is faster than a person can read a form and answer it.
const autoAnswerWindow = 300 * time.Millisecond

// answeredByClient reports whether an elicitation was answered by the
// client rather than a person: declined or cancelled with no content
// within autoAnswerWindow. Headless clients (`claude -p`, `codex exec`)
// do that with every request. Such an answer is treated as no answer: the
// approval terminal asks, or the non-interactive decision applies (deny
// unless mcp.non_interactive is allow).
func answeredByClient(res *sdk.ElicitResult, took time.Duration) bool {
	return res.Action != "accept" && len(res.Content) == 0 && took < autoAnswerWindow
}

func (a *Approver) fallback(req tools.ApprovalRequest, why string) tools.Approval {
	if a.nonInteractive {
		return tools.Approval{Allow: true, By: "non-interactive"}
	}
	msg := why + ", and the configured non-interactive decision (mcp.non_interactive) is deny."
	if a.tty == nil {
		msg += " A person can make agentbox ask them instead by setting mcp.approval_tty to a terminal (run `tty` in one), or by using an MCP client that supports elicitation."
	}
	if v := req.Verdict; v != nil && len(v.Reasons) > 0 {
		msg += " The classifier judged the command " + v.Class + ":"
		for i, r := range v.Reasons {
			if i > 0 {
				msg += ";"
			}
			msg += " " + r.Message
			if r.Text != "" {
				msg += fmt.Sprintf(" (%q)", r.Text)
			}
		}
		msg += "."
	}
	return tools.Approval{Allow: false, By: "non-interactive", Message: msg}
}

// decide turns the client's answer into an Approval.
func decide(req tools.ApprovalRequest, res *sdk.ElicitResult) tools.Approval {
	const by = "mcp-elicitation"
	switch res.Action {
	case "accept":
		d, ok := res.Content[fieldDecision].(string)
		switch {
		case !ok && !req.OffersGrant():
			// The form had no field (see elicitParams): Accept is the
			// default answer, allow once. Where there was a field, an
			// accept without it is not understood (below).
			return tools.Approval{Allow: true, By: by}
		case d == decisionAllowOnce:
			return tools.Approval{Allow: true, By: by}
		case d == decisionAlwaysAllow || strings.HasPrefix(d, decisionAlwaysAllow+":"):
			if !req.OffersGrant() {
				// Not offered (no safe prefix): allow this call only.
				return tools.Approval{Allow: true, By: by}
			}
			ap := tools.Approval{Allow: true, Remember: tools.GrantSession, By: by}
			if n, ok := strings.CutPrefix(d, decisionAlwaysAllow+":"); ok {
				i, err := strconv.Atoi(n)
				if err != nil || i < 0 || i >= len(req.Prefixes) {
					return tools.Approval{Allow: true, By: by} // not one offered: this call only
				}
				ap.Prefixes = [][]string{req.Prefixes[i]}
			}
			return ap
		case d == decisionDeny:
			return tools.Approval{Allow: false, By: by, Message: "The user denied this call. Do not retry it; ask the user what to do instead."}
		}
		return tools.Approval{Allow: false, By: by, Message: "The approval answer was not understood, so the call was refused."}
	case "decline":
		return tools.Approval{Allow: false, By: by, Message: "The user declined this call. Do not retry it; ask the user what to do instead."}
	default: // cancel: dismissed without a choice
		return tools.Approval{Allow: false, By: by, Message: "The user dismissed the approval request, so the call was refused."}
	}
}

// elicitParams builds the form shown to the person: the call, why it
// asks, and one field with one choice to make, the default first. Allow
// once; "always allow" for this session — of the tool, or of each part of
// a command no rule or grant covers yet (decisionAlwaysAllow+":N" for the
// Nth offered prefix), and of all of them at once when there are several;
// or deny. When "always allow" cannot be offered (a command with no
// prefix to key a grant by), the form has no field at all: the client's
// Accept allows once and Decline denies, one keystroke fewer in clients
// that focus a form's first field (Claude Code 2.1).
//
// Everything in the message and the titles comes from the call (the
// command, paths, reasons that quote the command): each piece is escaped
// with termtext.Line, so that no escape sequence, bidi override or newline
// can redraw or reorder the question. The summary is never cut: for a
// command it is the whole command.
func elicitParams(req tools.ApprovalRequest) *sdk.ElicitParams {
	l := termtext.Line
	q := func(s string) string { return `"` + l(s) + `"` }
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox: allow this %s call?\n", l(req.Tool))
	if req.Summary != "" {
		fmt.Fprintf(&b, "\n  %s\n", l(req.Summary))
	}
	if v := req.Verdict; v != nil {
		fmt.Fprintf(&b, "\nclass: %s\n", l(v.Class))
		if len(v.Reasons) > 0 {
			b.WriteString("reasons:\n")
			for _, r := range v.Reasons {
				fmt.Fprintf(&b, "  - %s", l(r.Message))
				if r.Text != "" {
					fmt.Fprintf(&b, " (%s at byte %d, rule %s)", q(r.Text), r.Offset, l(r.Rule))
				} else if r.Rule != "" {
					fmt.Fprintf(&b, " (rule %s)", l(r.Rule))
				}
				b.WriteString("\n")
			}
		}
	}
	if req.Reason != "" {
		fmt.Fprintf(&b, "why approval is needed: %s\n", l(req.Reason))
	}
	if !req.OffersGrant() {
		b.WriteString("\nAccept allows this call once; Decline denies it.")
		return &sdk.ElicitParams{
			Message:         b.String(),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}
	}
	choices := []any{
		map[string]any{"const": decisionAllowOnce, "title": "Allow once"},
	}
	switch {
	case req.Verdict == nil:
		choices = append(choices, map[string]any{"const": decisionAlwaysAllow, "title": fmt.Sprintf("Always allow %s (this session)", l(req.Tool))})
	case len(req.Prefixes) == 1:
		choices = append(choices, map[string]any{"const": decisionAlwaysAllow, "title": fmt.Sprintf("Always allow %s (this session)", q(strings.Join(req.Prefixes[0], " ")))})
	case len(req.Prefixes) > 1:
		all := make([]string, len(req.Prefixes))
		for i, p := range req.Prefixes {
			all[i] = q(strings.Join(p, " "))
			choices = append(choices, map[string]any{"const": fmt.Sprintf("%s:%d", decisionAlwaysAllow, i), "title": fmt.Sprintf("Always allow %s (this session)", all[i])})
		}
		choices = append(choices, map[string]any{"const": decisionAlwaysAllow, "title": fmt.Sprintf("Always allow %s (this session)", strings.Join(all, " and "))})
	}
	choices = append(choices, map[string]any{"const": decisionDeny, "title": "Deny"})
	return &sdk.ElicitParams{
		Message: strings.TrimRight(b.String(), "\n"),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				fieldDecision: map[string]any{
					"type":    "string",
					"title":   "Decision",
					"oneOf":   choices,
					"default": decisionAllowOnce,
				},
			},
			"required": []string{fieldDecision},
		},
	}
}
