package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/tools/termtext"
)

// reasonWait bounds how long a TTY approver waits for the optional reason
// after a refusal; the refusal stands without one.
const reasonWait = time.Minute

// TTYApprover asks a person on a terminal. Questions are asked one at a
// time; a pending question is abandoned (as a refusal) when ctx ends.
type TTYApprover struct {
	in  *bufio.Reader
	out io.Writer
	mu  sync.Mutex
	// pending is a read still waiting for a line after an abandoned
	// question; the next question takes its answer over, so that two
	// reads never race on in.
	pending chan ttyAnswer
}

type ttyAnswer struct {
	line string
	err  error
}

// NewTTYApprover reads answers from in and writes questions to out.
func NewTTYApprover(in io.Reader, out io.Writer) *TTYApprover {
	return &TTYApprover{in: bufio.NewReader(in), out: out}
}

// Approve implements [Approver].
func (a *TTYApprover) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	// Everything shown comes from the call: escape it, so that a command
	// cannot redraw its own question (termtext.Line).
	fmt.Fprintf(&b, "\nagentbox: approve this call?\n  %s\n  why: %s\n", termtext.Line(req.Summary), termtext.Line(req.Reason))
	if v := req.Verdict; v != nil {
		for _, r := range v.Reasons {
			fmt.Fprintf(&b, "  - %s", termtext.Line(r.Message))
			if r.Text != "" {
				fmt.Fprintf(&b, " (\"%s\")", termtext.Line(r.Text))
			}
			b.WriteString("\n")
		}
	}
	always := ""
	if req.OffersGrant() {
		// One grant per part not allowed yet: Bash(go test:*), Bash(make:*).
		whats := []string{req.Tool}
		if req.Verdict != nil {
			whats = whats[:0]
			for _, p := range req.Prefixes {
				whats = append(whats, req.Tool+"("+strings.Join(p, " ")+":*)")
			}
		}
		what := termtext.Line(strings.Join(whats, ", "))
		always = fmt.Sprintf(", [s]ession-always / [p]roject-always allow %s", what)
	}
	fmt.Fprintf(&b, "[y]es / [N]o%s: ", always)
	if _, err := io.WriteString(a.out, b.String()); err != nil {
		return Approval{}, err
	}
	line, err := a.readLine(ctx)
	if err != nil {
		return Approval{}, err
	}
	if line == nil { // end of input
		return Approval{Allow: false, By: "tty"}, nil
	}
	switch strings.ToLower(strings.TrimSpace(*line)) {
	case "y", "yes":
		return Approval{Allow: true, By: "tty"}, nil
	case "s", "session":
		if always != "" {
			return Approval{Allow: true, Remember: GrantSession, By: "tty"}, nil
		}
	case "p", "project":
		if always != "" {
			return Approval{Allow: true, Remember: GrantProject, By: "tty"}, nil
		}
	}
	// Refused: the person may say why, for the model.
	if _, err := io.WriteString(a.out, "denied. Reason for the agent (optional, Enter to skip): "); err != nil {
		return Approval{Allow: false, By: "tty"}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, reasonWait)
	defer cancel()
	reason, err := a.readLine(rctx)
	if err != nil {
		// The refusal stands; only the reason is lost.
		return Approval{Allow: false, By: "tty"}, nil
	}
	ap := Approval{Allow: false, By: "tty"}
	if reason != nil {
		ap.Feedback = strings.TrimSpace(*reason)
	}
	return ap, nil
}

// readLine reads one line of input, or gives up when ctx ends (the read
// then stays pending for the next question). It returns nil at end of
// input.
func (a *TTYApprover) readLine(ctx context.Context) (*string, error) {
	ch := a.pending
	if ch == nil {
		ch = make(chan ttyAnswer, 1)
		go func() {
			line, err := a.in.ReadString('\n')
			ch <- ttyAnswer{line, err}
		}()
	}
	select {
	case <-ctx.Done():
		a.pending = ch
		fmt.Fprintln(a.out)
		return nil, ctx.Err()
	case ans := <-ch:
		a.pending = nil
		if ans.err != nil && ans.line == "" {
			return nil, nil
		}
		return &ans.line, nil
	}
}
