package tools

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestTTYApprover(t *testing.T) {
	req := ApprovalRequest{Tool: "Bash", Summary: "Bash: npm test", Reason: "not read-only", Verdict: &Verdict{Class: ClassDangerous, Reasons: []Reason{{Message: "runs scripts", Text: "npm"}}}, Prefix: []string{"npm", "test"}}
	tests := []struct {
		in       string
		req      ApprovalRequest
		allow    bool
		remember GrantScope
	}{
		{"y\n", req, true, GrantOnce},
		{"yes\n", req, true, GrantOnce},
		{"\n", req, false, GrantOnce},
		{"n\n", req, false, GrantOnce},
		{"whatever\n", req, false, GrantOnce},
		{"s\n", req, true, GrantSession},
		{"p\n", req, true, GrantProject},
		{"", req, false, GrantOnce}, // EOF
		// Without an offered prefix a command cannot be remembered.
		{"p\n", ApprovalRequest{Tool: "Bash", Verdict: &Verdict{Class: ClassDangerous}}, false, GrantOnce},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		a := NewTTYApprover(strings.NewReader(tt.in), &out)
		got, err := a.Approve(context.Background(), tt.req)
		if err != nil || got.Allow != tt.allow || got.Remember != tt.remember || got.By != "tty" {
			t.Errorf("answer %q: %+v %v", tt.in, got, err)
		}
		if !strings.Contains(out.String(), tt.req.Summary) {
			t.Errorf("prompt %q lacks the summary", out.String())
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
