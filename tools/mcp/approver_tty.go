package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/termtext"
)

// ErrNotTerminal is returned by OpenTTYChannel for a path that is not a
// terminal device.
var ErrNotTerminal = errors.New("not a terminal device")

// errTTYUnavailable wraps a failure to open the approval terminal when a
// call needs it; the approver then applies the non-interactive decision.
var errTTYUnavailable = errors.New("approval terminal unavailable")

// TTYChannel asks a person on a configured terminal device (mcp.approval_tty)
// for MCP sessions whose client cannot elicit. The terminal is opened for
// each question and closed after it, so a terminal that went away only
// costs that question (the non-interactive decision applies). Questions
// from every session are asked one at a time. Safe for concurrent use.
type TTYChannel struct {
	path string
	mu   sync.Mutex
	// open opens the terminal for one question (a hook for tests).
	open func() (io.ReadWriteCloser, error)
}

// OpenTTYChannel checks that path is a character device and a terminal
// (it opens it once, read and write, to be sure) and returns the channel
// that asks there.
func OpenTTYChannel(path string) (*TTYChannel, error) {
	f, err := openTerminal(path)
	if err != nil {
		return nil, fmt.Errorf("mcp.approval_tty: %w", err)
	}
	f.Close()
	c := &TTYChannel{path: path}
	c.open = func() (io.ReadWriteCloser, error) { return openTerminal(path) }
	return c, nil
}

// Path is the terminal device the channel asks on.
func (c *TTYChannel) Path() string { return c.path }

// openTerminal opens path read+write without making it the controlling
// terminal, and checks that it is a terminal.
func openTerminal(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		return nil, fmt.Errorf("%s: %w (not a character device)", path, ErrNotTerminal)
	}
	// Non-blocking: the runtime poller then lets Close end a pending read.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrNotTerminal)
	}
	return f, nil
}

// Ask opens the terminal and asks with tools.TTYApprover: allow once
// ("y"), always allow what is offered — the tool, or each part of a
// command not allowed yet — ("s" for this session, "p" for the project), or deny (anything else, end of input included). It waits
// for earlier questions, and stops waiting (with ctx's error) when ctx
// ends. A terminal that cannot be opened yields an error wrapping
// errTTYUnavailable.
func (c *TTYChannel) Ask(ctx context.Context, req tools.ApprovalRequest) (tools.Approval, error) {
	// Serialise questions, but keep honouring ctx while queued.
	locked := make(chan struct{})
	go func() {
		c.mu.Lock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-ctx.Done():
		go func() {
			<-locked
			c.mu.Unlock()
		}()
		return tools.Approval{}, ctx.Err()
	}
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return tools.Approval{}, err
	}

	t, err := c.open()
	if err != nil {
		return tools.Approval{}, fmt.Errorf("%w: %w", errTTYUnavailable, err)
	}
	// Closing the terminal also ends the read of an abandoned question.
	defer t.Close()
	class := "-"
	if req.Verdict != nil {
		class = string(req.Verdict.Class)
	}
	if _, err := fmt.Fprintf(t, "\nagentbox mcp: session %s wants to run %s (class %s)\n", termtext.Line(req.Session), termtext.Line(req.Tool), termtext.Line(class)); err != nil {
		return tools.Approval{}, fmt.Errorf("%w: %w", errTTYUnavailable, err)
	}
	ap, err := tools.NewTTYApprover(t, t).Approve(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Approval{}, ctx.Err()
		}
		return tools.Approval{}, fmt.Errorf("%w: %w", errTTYUnavailable, err)
	}
	if ap.Remember != tools.GrantOnce && !req.OffersGrant() {
		ap.Remember = tools.GrantOnce
	}
	if !ap.Allow {
		ap.Message = "The user denied this call at the approval terminal. Do not retry it; ask the user what to do instead."
	}
	return ap, nil
}
