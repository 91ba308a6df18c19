package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/tools"
)

// pty is a pseudo-terminal: the test plays the person on master; the
// channel opens the slave by its path.
type pty struct {
	t      *testing.T
	master *os.File
	path   string
	mu     sync.Mutex
	buf    bytes.Buffer
}

func newPTY(t *testing.T) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	p := &pty{t: t, master: m, path: "/dev/pts/" + strconv.Itoa(n)}
	go func() {
		b := make([]byte, 4096)
		for {
			k, err := m.Read(b)
			p.mu.Lock()
			p.buf.Write(b[:k])
			p.mu.Unlock()
			if err != nil && !errors.Is(err, unix.EIO) {
				return
			}
			if err != nil {
				// EIO: no slave open right now; poll again.
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	return p
}

// waitFor waits until the terminal has shown n occurrences of s.
func (p *pty) waitFor(s string, n int) string {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		out := p.buf.String()
		p.mu.Unlock()
		if strings.Count(out, s) >= n {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.Fatalf("terminal never showed %d× %q; it shows %q", n, s, p.buf.String())
	return ""
}

func (p *pty) answer(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.master, s); err != nil {
		p.t.Fatalf("typing %q: %v", s, err)
	}
}

func ttyRequest(prefix []string) tools.ApprovalRequest {
	return tools.ApprovalRequest{
		Session: "mcp-s1", Tool: "Bash", Summary: "Bash: rm -rf build",
		Reason:   "the classifier judged it dangerous",
		Verdict:  &tools.Verdict{Class: tools.ClassDangerous, Reasons: []tools.Reason{{Message: "deletes files recursively", Text: "rm -rf"}}},
		Prefixes: prefixes(prefix),
	}
}

func prefixes(p []string) [][]string {
	if p == nil {
		return nil
	}
	return [][]string{p}
}

func TestTTYChannelAnswers(t *testing.T) {
	const prompt = "[y]es / [N]o"
	tests := []struct {
		name     string
		prefix   []string
		in       string
		allow    bool
		remember tools.GrantScope
	}{
		{"allow once", []string{"rm"}, "y\n", true, tools.GrantOnce},
		{"always allow prefix", []string{"rm"}, "s\n", true, tools.GrantSession},
		{"always allow project", []string{"rm"}, "p\n", true, tools.GrantProject},
		{"deny", []string{"rm"}, "n\n", false, tools.GrantOnce},
		{"empty line denies", []string{"rm"}, "\n", false, tools.GrantOnce},
		{"no prefix: always not offered", nil, "s\n", false, tools.GrantOnce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPTY(t)
			c, err := OpenTTYChannel(p.path)
			if err != nil {
				t.Fatal(err)
			}
			a := (&Approver{timeout: time.Minute}).WithTTY(c)
			type res struct {
				ap  tools.Approval
				err error
			}
			done := make(chan res, 1)
			go func() {
				ap, err := a.Approve(context.Background(), ttyRequest(tt.prefix))
				done <- res{ap, err}
			}()
			out := p.waitFor(prompt, 1)
			for _, want := range []string{"Bash: rm -rf build", "class dangerous", "deletes files recursively", `"rm -rf"`, "mcp-s1"} {
				if !strings.Contains(out, want) {
					t.Errorf("prompt lacks %q: %q", want, out)
				}
			}
			if offered := strings.Contains(out, "allow Bash(rm:*)"); offered != (tt.prefix != nil) {
				t.Errorf("always-allow offered=%v with prefix %v: %q", offered, tt.prefix, out)
			}
			p.answer(tt.in)
			wantFeedback := ""
			if !tt.allow {
				// A refusal asks for the person's reason for the model.
				p.waitFor("Reason for the agent", 1)
				wantFeedback = "use rm -i instead"
				p.answer(wantFeedback + "\n")
			}
			r := <-done
			if r.err != nil || r.ap.Allow != tt.allow || r.ap.Remember != tt.remember || r.ap.By != "tty" || r.ap.Feedback != wantFeedback {
				t.Fatalf("answer %q: %+v %v", tt.in, r.ap, r.err)
			}
			if !tt.allow && !strings.Contains(r.ap.Message, "denied") {
				t.Errorf("refusal without a message for the model: %+v", r.ap)
			}
		})
	}
}

func TestTTYChannelCancel(t *testing.T) {
	p := newPTY(t)
	c, err := OpenTTYChannel(p.path)
	if err != nil {
		t.Fatal(err)
	}
	a := (&Approver{timeout: time.Hour}).WithTTY(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Approve(ctx, ttyRequest(nil))
		done <- err
	}()
	p.waitFor("[y]es", 1)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled question: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled question kept waiting")
	}
	// The terminal is free again: the next question is asked and answered.
	go func() {
		ap, err := a.Approve(context.Background(), ttyRequest(nil))
		if err != nil || !ap.Allow {
			t.Errorf("question after a cancel: %+v %v", ap, err)
		}
		done <- err
	}()
	p.waitFor("[y]es", 2)
	p.answer("y\n")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the question after a cancel got no answer (the abandoned read took it?)")
	}
}

func TestTTYChannelTimeout(t *testing.T) {
	p := newPTY(t)
	c, err := OpenTTYChannel(p.path)
	if err != nil {
		t.Fatal(err)
	}
	a := (&Approver{timeout: 100 * time.Millisecond}).WithTTY(c)
	ap, err := a.Approve(context.Background(), ttyRequest(nil))
	if err != nil || ap.Allow || !strings.Contains(ap.Message, "Nobody answered") {
		t.Fatalf("unanswered question: %+v %v", ap, err)
	}
}

func TestTTYChannelSerialises(t *testing.T) {
	p := newPTY(t)
	c, err := OpenTTYChannel(p.path)
	if err != nil {
		t.Fatal(err)
	}
	a := (&Approver{timeout: time.Minute}).WithTTY(c)
	results := make(chan tools.Approval, 2)
	for range 2 {
		go func() {
			ap, err := a.Approve(context.Background(), ttyRequest(nil))
			if err != nil {
				t.Error(err)
			}
			results <- ap
		}()
	}
	p.waitFor("[y]es", 1)
	time.Sleep(50 * time.Millisecond) // a second prompt, if not serialised, would show now
	if out := p.waitFor("[y]es", 1); strings.Count(out, "[y]es") != 1 {
		t.Fatalf("two questions at once: %q", out)
	}
	p.answer("y\n")
	first := <-results
	p.waitFor("[y]es", 2)
	p.answer("n\n")
	p.waitFor("Reason for the agent", 1)
	p.answer("\n")
	second := <-results
	if !first.Allow || second.Allow {
		t.Fatalf("answers y then n gave %+v then %+v", first, second)
	}
}

func TestTTYChannelUnavailableFallsBack(t *testing.T) {
	for _, allow := range []bool{false, true} {
		c := &TTYChannel{path: "/dev/pts/gone", open: func() (io.ReadWriteCloser, error) { return nil, os.ErrNotExist }}
		a := (&Approver{timeout: time.Minute, nonInteractive: allow}).WithTTY(c)
		ap, err := a.Approve(context.Background(), ttyRequest(nil))
		if err != nil || ap.Allow != allow || ap.By != "non-interactive" {
			t.Fatalf("allow=%v: %+v %v", allow, ap, err)
		}
		if !allow && !strings.Contains(ap.Message, "mcp.approval_tty") {
			t.Errorf("refusal does not say the terminal failed: %q", ap.Message)
		}
	}
}

func TestOpenTTYChannelRejectsNonTerminal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, "/dev/null", filepath.Join(t.TempDir(), "missing")} {
		if _, err := OpenTTYChannel(path); err == nil || !strings.Contains(err.Error(), "mcp.approval_tty") {
			t.Errorf("%s: accepted or unclear error: %v", path, err)
		}
	}
	for _, path := range []string{file, "/dev/null"} {
		if _, err := OpenTTYChannel(path); !errors.Is(err, ErrNotTerminal) {
			t.Errorf("%s: %v, want ErrNotTerminal", path, err)
		}
	}
}

// A command's escape sequences reach the approval terminal escaped: it
// cannot redraw its question, hide the reasons or write the clipboard.
func TestTTYChannelEscapes(t *testing.T) {
	raw := "rm -rf ~ \x1b[1A\x1b[2K\rBash: ls\x1b]52;c;eA==\x07\u009b2J\u202e"
	shown := `rm -rf ~ \x1b[1A\x1b[2K\rBash: ls\x1b]52;c;eA==\x07\u009b2J\u202e`
	p := newPTY(t)
	c, err := OpenTTYChannel(p.path)
	if err != nil {
		t.Fatal(err)
	}
	a := (&Approver{timeout: time.Minute}).WithTTY(c)
	req := ttyRequest([]string{"rm"})
	req.Session = "s\x1b[2J"
	req.Summary = "Bash: " + raw
	req.Verdict.Reasons[0].Text = raw
	done := make(chan error, 1)
	go func() {
		_, err := a.Approve(context.Background(), req)
		done <- err
	}()
	out := p.waitFor("[y]es / [N]o", 1)
	p.answer("n\n")
	p.waitFor("Reason for the agent", 1)
	p.answer("\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Bash: " + shown, `("` + shown + `")`, `session s\x1b[2J `} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal lacks %q:\n%q", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\a\u009b\u202e") {
		t.Errorf("terminal got a raw control character: %q", out)
	}
}
