package tools

import (
	"context"
	"testing"
)

func TestRunningCallsApproveNetwork(t *testing.T) {
	var asked []ApprovalRequest
	answers := map[string]Approval{
		"once.example":    {Allow: true, By: "mcp-elicitation"},
		"session.example": {Allow: true, Remember: GrantSession, By: "mcp-elicitation"},
		"project.example": {Allow: true, Remember: GrantProject, By: "tty"},
		"no.example":      {Allow: false, By: "mcp-elicitation"},
	}
	ap := ApproverFunc(func(_ context.Context, req ApprovalRequest) (Approval, error) {
		asked = append(asked, req)
		return answers[req.Prefixes[0][0]], nil
	})
	store := &memGrants{}
	rc := NewRunningCalls()
	sess := NewSession("s1", "/ws")
	type q struct {
		host string
		want bool
		ask  bool
	}
	var bad []string
	h := rc.Stage(ap, store)(func(ctx context.Context, c *Call) Result {
		for _, x := range []q{
			{"once.example", true, true}, {"once.example", true, true}, // once: asked again
			{"session.example", true, true}, {"session.example", true, false},
			{"project.example", true, true}, {"project.example", true, false},
			{"no.example", false, true},
		} {
			n := len(asked)
			ok, _, err := rc.ApproveNetwork(ctx, c.ID, x.host, 443)
			if err != nil || ok != x.want || (len(asked) > n) != x.ask {
				bad = append(bad, x.host)
			}
		}
		return Result{}
	})
	h(context.Background(), &Call{ID: "c1", Session: sess})
	if len(bad) > 0 {
		t.Fatalf("wrong answers for %v", bad)
	}
	if r := asked[0]; r.Tool != NetworkTool || r.CallID != "c1" || r.Session != "s1" || r.Summary == "" {
		t.Fatalf("request %+v", r)
	}
	if len(store.gs) != 1 || store.gs[0].Prefix[0] != "project.example" || store.gs[0].Scope != GrantProject {
		t.Fatalf("project grants %+v", store.gs)
	}
	// The call has returned: nobody can be asked for it any more.
	if ok, by, _ := rc.ApproveNetwork(context.Background(), "c1", "once.example", 443); ok || by != "non-interactive" {
		t.Fatalf("after the call: %v %s", ok, by)
	}
}
