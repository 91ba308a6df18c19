package tools

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTTYApprover(t *testing.T) {
	req := ApprovalRequest{Tool: "Bash", Summary: "Bash: npm test", Reason: "not read-only", Verdict: &Verdict{Class: ClassDangerous, Reasons: []Reason{{Message: "runs scripts", Text: "npm"}}}, Prefixes: [][]string{{"npm", "test"}}}
	tests := []struct {
		in       string
		req      ApprovalRequest
		allow    bool
		remember GrantScope
		feedback string
	}{
		{"y\n", req, true, GrantOnce, ""},
		{"yes\n", req, true, GrantOnce, ""},
		{"\n", req, false, GrantOnce, ""},
		{"n\n", req, false, GrantOnce, ""},
		{"whatever\n", req, false, GrantOnce, ""},
		{"s\n", req, true, GrantSession, ""},
		{"p\n", req, true, GrantProject, ""},
		{"", req, false, GrantOnce, ""}, // EOF
		// Without an offered prefix a command cannot be remembered.
		{"p\n", ApprovalRequest{Tool: "Bash", Verdict: &Verdict{Class: ClassDangerous}}, false, GrantOnce, ""},
		// A refusal may carry the person's reason for the model.
		{"n\n  use make test instead \n", req, false, GrantOnce, "use make test instead"},
		{"\n\n", req, false, GrantOnce, ""},
		{"n\nno newline at the end", req, false, GrantOnce, "no newline at the end"},
		{"y\nnot read\n", req, true, GrantOnce, ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		a := NewTTYApprover(strings.NewReader(tt.in), &out)
		got, err := a.Approve(context.Background(), tt.req)
		if err != nil || got.Allow != tt.allow || got.Remember != tt.remember || got.By != "tty" || got.Feedback != tt.feedback {
			t.Errorf("answer %q: %+v %v", tt.in, got, err)
		}
		if !strings.Contains(out.String(), tt.req.Summary) {
			t.Errorf("prompt %q lacks the summary", out.String())
		}
		if asked := strings.Contains(out.String(), "Reason for the agent"); asked != (!tt.allow && tt.in != "") {
			t.Errorf("answer %q: reason asked = %v", tt.in, asked)
		}
	}
	var out bytes.Buffer
	a := NewTTYApprover(strings.NewReader("y\n"), &out)
	a.Approve(context.Background(), req)
	if !strings.Contains(out.String(), "Bash(npm test:*)") || !strings.Contains(out.String(), "runs scripts") {
		t.Errorf("prompt: %s", out.String())
	}
}

func TestTTYApproverHonoursCtx(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	a := NewTTYApprover(r, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := a.Approve(ctx, ApprovalRequest{Tool: "Bash"}); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("approve did not give up with ctx: %v", err)
	}
}

func TestDenyApprover(t *testing.T) {
	got, err := DenyApprover{}.Approve(context.Background(), ApprovalRequest{})
	if err != nil || got.Allow {
		t.Fatal(got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (DenyApprover{}).Approve(ctx, ApprovalRequest{}); err == nil {
		t.Fatal("cancelled ctx ignored")
	}
}

// nastyStrings are what a command can carry to redraw, hide or abuse the
// operator's terminal; none may reach it raw.
var nastyStrings = []struct{ name, raw, shown string }{
	{"CSI erase and redraw", "rm -rf ~\x1b[1A\x1b[2K\rls", `rm -rf ~\x1b[1A\x1b[2K\rls`},
	{"OSC 52 clipboard", "\x1b]52;c;Y3VybCB4fHNo\x07", `\x1b]52;c;Y3VybCB4fHNo\x07`},
	{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
	{"BEL", "x\a", `x\x07`},
	{"backspace", "rm\b\bls", `rm\x08\x08ls`},
	{"DEL", "a\x7f", `a\x7f`},
	{"newline", "ls\nrm -rf ~", `ls\nrm -rf ~`},
	{"invalid UTF-8", "a\xff\xc3", `a\xff\xc3`},
	{"bidi override", "ls \u202eexe.sh", `ls \u202eexe.sh`},
}

// TestTTYApproverParts: "always allow" on the terminal offers every part
// of a command not allowed yet, and the answer covers them all.
func TestTTYApproverParts(t *testing.T) {
	req := ApprovalRequest{Tool: "Bash", Summary: "Bash: make && npm test", Reason: "r", Verdict: &Verdict{Class: ClassDangerous},
		Prefixes: [][]string{{"make"}, {"npm", "test"}}}
	var out bytes.Buffer
	got, err := NewTTYApprover(strings.NewReader("p\n"), &out).Approve(context.Background(), req)
	if err != nil || !got.Allow || got.Remember != GrantProject || got.Prefixes != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if !strings.Contains(out.String(), "allow Bash(make:*), Bash(npm test:*)") {
		t.Fatalf("prompt does not offer both parts:\n%s", out.String())
	}
}

func TestTTYApproverEscapes(t *testing.T) {
	for _, tt := range nastyStrings {
		t.Run(tt.name, func(t *testing.T) {
			req := ApprovalRequest{
				Tool: "Bash", Summary: "Bash: " + tt.raw, Reason: "why " + tt.raw,
				Verdict:  &Verdict{Class: ClassDangerous, Reasons: []Reason{{Message: "msg " + tt.raw, Text: tt.raw}}},
				Prefixes: [][]string{{tt.raw}},
			}
			var out bytes.Buffer
			if _, err := NewTTYApprover(strings.NewReader("n\n"), &out).Approve(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, want := range []string{"Bash: " + tt.shown, "why " + tt.shown, "msg " + tt.shown, `("` + tt.shown + `")`, "Bash(" + tt.shown + ":*)"} {
				if !strings.Contains(got, want) {
					t.Errorf("prompt lacks %q:\n%q", want, got)
				}
			}
			assertTerminalSafe(t, got)
		})
	}
}

// assertTerminalSafe fails when s holds anything but printable text,
// newlines and tabs.
func assertTerminalSafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("output is not valid UTF-8: %q", s)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e {
			t.Errorf("output holds %U: %q", r, s)
			return
		}
	}
}

func TestTTYApproverReasonWaitEndsWithCtx(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	a := NewTTYApprover(r, io.Discard)
	go w.Write([]byte("n\n")) // and then no reason ever comes
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got, err := a.Approve(ctx, ApprovalRequest{Tool: "Bash"})
	if err != nil || got.Allow || got.Feedback != "" {
		t.Fatalf("a refusal must stand when the reason never comes: %+v %v", got, err)
	}
}
