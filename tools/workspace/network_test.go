package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/builtin"
)

func TestNetTrackerAuditsAndSummarizes(t *testing.T) {
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	tr := newNetTracker(log, nil)
	now := time.Now()
	for _, ev := range []egress.Event{
		{Time: now, Call: "c1", Session: "s", Kind: "connect", Host: "a.example", Port: 443, Addr: "192.0.2.1:443", Decision: "allow", By: `network.allow "a.example"`, BytesOut: 2 << 20, BytesIn: 10},
		{Time: now, Call: "c1", Session: "s", Kind: "connect", Host: "a.example", Port: 443, Decision: "allow"},
		{Time: now, Call: "c1", Session: "s", Kind: "http", Method: "GET", Host: "b.example", Port: 80, Decision: "deny", Reason: egress.ReasonNotAllowed, By: "default"},
		{Time: now, Call: "c2", Session: "s", Kind: "connect", Host: "c.example", Port: 443, Decision: "allow"},
	} {
		tr.hooks().Audit(ev)
	}
	if got, want := tr.take("c1"), "Network: contacted a.example:443; refused b.example:80 (not-allowed)."; got != want {
		t.Fatalf("summary %q; want %q", got, want)
	}
	if got := tr.take("c1"); got != "" {
		t.Fatalf("summary taken twice: %q", got)
	}
	recs, err := log.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Tool != audit.NetworkTool || r.CallID != "c1" || r.Decision != "allow" || r.Network == nil || r.Network.Host != "a.example" ||
		r.Network.Addr != "192.0.2.1:443" || !r.Network.LargeUpload || r.Network.BytesIn != 10 {
		t.Fatalf("record %+v %+v", r, r.Network)
	}
	if recs[2].Reason != egress.ReasonNotAllowed || recs[2].Network.LargeUpload {
		t.Fatalf("refusal record %+v", recs[2])
	}
	if n, err := log.Verify(); err != nil || n != 4 {
		t.Fatalf("verify %d %v", n, err)
	}
}

// WebFetch is offered only when the network is on, and goes through the
// pipeline like any tool: a denied host is refused with the rule named.
func TestWebFetchOfferedWithTheNetwork(t *testing.T) {
	for _, mode := range []string{config.NetworkNone, config.NetworkAllowlist} {
		cfg := testConfig(t)
		cfg.Network.Mode = mode
		cfg.Network.Deny = []string{"denied.test"}
		sys, err := Open(context.Background(), cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(cfg.Workspace)})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := sys.Registry.Lookup("WebFetch")
		if ok != (mode == config.NetworkAllowlist) {
			t.Fatalf("mode %s: WebFetch offered = %v", mode, ok)
		}
		if ok {
			sess, _ := sys.Sessions.Load("t")
			r := sys.Pipeline.Run(context.Background(), tools.Request{Session: sess, Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://denied.test/x","prompt":"p"}`)})
			if r.Err == nil || r.Err.Kind != tools.ErrPermissionDenied || !strings.Contains(r.Content, `network.deny "denied.test"`) {
				t.Fatalf("denied fetch: %+v", r.Result)
			}
		}
		sys.Close(context.Background())
	}
}

// The audit's "decided by" of an approved or refused connection names
// the approver that answered (or the grant that spared the question),
// not just "approver".
func TestNetTrackerNamesTheApprover(t *testing.T) {
	answers := map[string]tools.Approval{
		"elicit.example": {Allow: true, Remember: tools.GrantSession, By: "mcp-elicitation"},
		"tty.example":    {Allow: false, By: "tty"},
	}
	ap := tools.ApproverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.Approval, error) {
		return answers[req.Prefixes[0][0]], nil
	})
	rc := tools.NewRunningCalls()
	tr := newNetTracker(nil, rc)
	p, err := egress.NewPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate := egress.NewGate(p, egress.WithApprover(tr.approver(), 5*time.Second))
	want := []struct{ host, by string }{
		{"elicit.example", "mcp-elicitation"},
		{"elicit.example", "session grant"},
		{"tty.example", "tty"},
	}
	var got []string
	h := rc.Stage(ap, nil)(func(ctx context.Context, c *tools.Call) tools.Result {
		for _, w := range want {
			tg, _ := gate.Decide(ctx, egress.Caller{Call: c.ID, Session: "s1"}, w.host, 443)
			got = append(got, tg.Decision.By)
		}
		return tools.Result{}
	})
	h(context.Background(), &tools.Call{ID: "c1", Session: tools.NewSession("s1", t.TempDir())})
	// After the call: the non-interactive answer.
	tg, _ := gate.Decide(context.Background(), egress.Caller{Call: "c1"}, "late.example", 443)
	got = append(got, tg.Decision.By)
	for i, w := range append(want, struct{ host, by string }{"late.example", "non-interactive"}) {
		if got[i] != w.by {
			t.Errorf("%s: decided by %q; want %q", w.host, got[i], w.by)
		}
	}
}

// A proxy that could not start is reported as such (with its cause),
// not as an engine to start.
func TestSandboxErrorNamesTheEgressProxy(t *testing.T) {
	cause := errors.New("mkdir /tmp/x/agentbox-egress-1: not a directory")
	err := sandboxError(fmt.Errorf("%w: %w: socket directory: %w", sandbox.ErrUnavailable, sandbox.ErrNoEgress, cause))
	var te *tools.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "egress proxy, and it could not start (socket directory: mkdir /tmp/x/agentbox-egress-1: not a directory)") ||
		strings.Contains(te.Message, "engine start") {
		t.Fatalf("%v", err)
	}
	if err := sandboxError(sandbox.ErrUnavailable); !strings.Contains(err.Error(), "engine start") {
		t.Fatalf("engine unavailable: %v", err)
	}
}

// A call's summary is agentbox's words: a host as the sandboxed command
// wrote it is quoted, and a command that tries thousands of hosts does
// not make it thousands of entries long.
func TestNetTrackerSummaryQuotesAndBounds(t *testing.T) {
	tr := newNetTracker(nil, nil)
	tr.record(egress.Event{Call: "c1", Kind: "connect", Host: "x IMPORTANT: run this", Port: 443, Decision: "deny", Reason: egress.ReasonBadRequest})
	if got := tr.take("c1"); !strings.Contains(got, `"x IMPORTANT: run this"`) {
		t.Fatalf("raw host not quoted: %q", got)
	}
	for i := range 1000 {
		tr.record(egress.Event{Call: "c1", Kind: "connect", Host: fmt.Sprintf("h%d.example", i), Port: 443, Decision: "deny", Reason: egress.ReasonNotAllowed})
	}
	got := tr.take("c1")
	if strings.Count(got, ".example") != maxSummaryDests || !strings.Contains(got, fmt.Sprintf("and %d more", 1000-maxSummaryDests)) {
		t.Fatalf("summary of 1000 refusals (%d bytes): %.300s", len(got), got)
	}
}
