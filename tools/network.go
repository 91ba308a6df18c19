package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// NetworkTool is the name grants and approval requests for a network
// destination carry: a [Grant] with Tool NetworkTool and Prefix
// []string{host} allows the sandbox's connections to host (any port)
// without asking again.
const NetworkTool = "Network"

// RunningCalls lets what works on a call's behalf while it runs — the
// egress proxy, on the host — put a question to that call's approver,
// the same person (MCP elicitation, TTY, non-interactive decision) and
// the same grants as the call's own approval. Safe for concurrent use.
type RunningCalls struct {
	mu    sync.Mutex
	calls map[string]runningCall
	now   func() time.Time
}

type runningCall struct {
	c        *Call
	approver Approver
	grants   GrantStore
}

// NewRunningCalls returns an empty registry.
func NewRunningCalls() *RunningCalls {
	return &RunningCalls{calls: map[string]runningCall{}, now: time.Now}
}

// Stage registers every call that reaches it for as long as the rest of
// the pipeline runs it.
func (r *RunningCalls) Stage(ap Approver, store GrantStore) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			r.mu.Lock()
			r.calls[c.ID] = runningCall{c: c, approver: approverOf(c, ap), grants: store}
			r.mu.Unlock()
			defer func() {
				r.mu.Lock()
				delete(r.calls, c.ID)
				r.mu.Unlock()
			}()
			return next(ctx, c)
		}
	}
}

// ApproveNetwork asks whether call may connect to host:port: a session
// or project grant for host answers at once; otherwise the call's
// approver is asked, and an "always allow" answer becomes a grant of
// that scope. A call that is not running (a background command whose
// call returned) is refused: nobody can be asked for it.
func (r *RunningCalls) ApproveNetwork(ctx context.Context, callID, host string, port uint16) (bool, string, error) {
	r.mu.Lock()
	rc, ok := r.calls[callID]
	r.mu.Unlock()
	if !ok {
		return false, "non-interactive", nil
	}
	match := func(g Grant) bool { return g.Tool == NetworkTool && slices.Equal(g.Prefix, []string{host}) }
	if slices.ContainsFunc(rc.c.Session.Grants(), match) {
		return true, "session grant", nil
	}
	if rc.grants != nil && slices.ContainsFunc(rc.grants.List(), match) {
		return true, "project grant", nil
	}
	dest := net.JoinHostPort(host, strconv.Itoa(int(port)))
	in, _ := json.Marshal(map[string]any{"host": host, "port": port})
	ans, err := rc.approver.Approve(ctx, ApprovalRequest{
		CallID: callID, Session: rc.c.Session.ID, Tool: NetworkTool, Input: in,
		Summary:  fmt.Sprintf("the sandboxed command of call %s connects to %s", callID, dest),
		Reason:   fmt.Sprintf("%s is not in network.allow (network.deny does not list it either)", host),
		Prefixes: [][]string{{host}},
	})
	if err != nil {
		return false, "approver", err
	}
	if !ans.Allow {
		return false, ans.By, nil
	}
	g := Grant{Tool: NetworkTool, Prefix: []string{host}, Scope: ans.Remember, At: r.now(), By: ans.By}
	switch ans.Remember {
	case GrantSession:
		rc.c.Session.AddGrant(g)
	case GrantProject:
		if rc.grants == nil || rc.grants.Add(g) != nil {
			rc.c.Session.AddGrant(g)
		}
	}
	return true, ans.By, nil
}
