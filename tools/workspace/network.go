package workspace

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/webfetch"
)

// netTracker records the egress proxy's connections: each one in the
// audit log, and per call the destinations contacted and refused, for
// the call's result. Safe for concurrent use.
type netTracker struct {
	log     *audit.Log
	running *tools.RunningCalls // asks a running call's approver; nil: unknown destinations are refused
	mu      sync.Mutex
	// calls holds the destinations of calls still running (taken by
	// take when the command returns).
	calls map[string]*callNet
}

// maxTrackedCalls bounds the summaries kept for calls whose result never
// takes them (background commands).
const maxTrackedCalls = 256

type callNet struct {
	contacted, refused dests
}

// dests is a list of distinct destinations, at most maxSummaryDests of
// them named; more counts the others.
type dests struct {
	names []string
	more  int
}

func (d *dests) add(s string) {
	switch {
	case slices.Contains(d.names, s):
	case len(d.names) < maxSummaryDests:
		d.names = append(d.names, s)
	default:
		d.more++ // may count one twice: it is a hint that the list is cut
	}
}

func (d dests) String() string {
	s := strings.Join(d.names, ", ")
	if d.more > 0 {
		s += fmt.Sprintf(" and %d more (see the audit log)", d.more)
	}
	return s
}

func newNetTracker(log *audit.Log, running *tools.RunningCalls) *netTracker {
	return &netTracker{log: log, running: running, calls: map[string]*callNet{}}
}

// hooks are the sandbox's network hooks: this tracker, and questions
// about unknown destinations put to the call's own approver.
func (t *netTracker) hooks() sandbox.Network {
	return sandbox.Network{Audit: t.record, Approver: t.approver()}
}

// maxSummaryDests bounds the destinations a call's summary names in each
// list; the audit log has every one.
const maxSummaryDests = 20

func (t *netTracker) record(ev egress.Event) {
	host := ev.Host
	if h, _, err := egress.NormalizeHost(host); err != nil || h != host {
		// A refused request's host as the sandboxed command wrote it:
		// the summary is agentbox's words, so it is quoted.
		host = strconv.Quote(host)
	}
	dest := host
	if ev.Port != 0 {
		dest = net.JoinHostPort(host, strconv.Itoa(int(ev.Port)))
	}
	if ev.Call != "" && dest != "" && ev.Kind != "fetch" { // WebFetch's own result names its page
		t.mu.Lock()
		c := t.calls[ev.Call]
		if c == nil && len(t.calls) < maxTrackedCalls {
			c = &callNet{}
			t.calls[ev.Call] = c
		}
		if c == nil {
			// Too many calls never taken (background jobs): the audit
			// log still has every connection.
		} else if ev.Decision == "allow" {
			c.contacted.add(dest)
		} else {
			c.refused.add(dest + " (" + ev.Reason + ")")
		}
		t.mu.Unlock()
	}
	if t.log == nil {
		return
	}
	r := audit.Record{
		Time: ev.Time.UTC(), Session: ev.Session, CallID: ev.Call, Tool: audit.NetworkTool,
		Decision: ev.Decision, DecidedBy: ev.By, Reason: ev.Reason, DurationMS: ev.Duration.Milliseconds(),
		Network: &audit.Connection{Kind: ev.Kind, Method: ev.Method, Host: ev.Host, Port: ev.Port, Addr: ev.Addr,
			BytesOut: ev.BytesOut, BytesIn: ev.BytesIn, LargeUpload: ev.BytesOut >= audit.LargeUpload},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = t.log.Append(ctx, r) // a failing log is sticky: the next call's record reports it
}

// approver asks the running call's approver about unknown destinations.
func (t *netTracker) approver() egress.Approver {
	if t.running == nil {
		return nil
	}
	return func(ctx context.Context, q egress.Question) (egress.Verdict, error) {
		ok, by, err := t.running.ApproveNetwork(ctx, q.Call, q.Host, q.Port)
		if q.By != nil {
			*q.By = by
		}
		if err != nil || !ok {
			return egress.Deny, err
		}
		return egress.Allow, nil
	}
}

// webFetch is the WebFetch tool over the network policy, or nil when the
// network is off (then the tool is not offered: nothing is reachable).
func (t *netTracker) webFetch(cfg *config.Config) (tools.Tool, error) {
	if cfg.Network.Mode != config.NetworkAllowlist {
		return nil, nil
	}
	p, err := egress.NewPolicy(cfg.Network.Allow, cfg.Network.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	var opts []egress.GateOption
	if a := t.approver(); a != nil {
		opts = append(opts, egress.WithApprover(a, cfg.MCP.ApprovalTimeout))
	}
	f := webfetch.New(egress.NewGate(p, opts...), cfg.Network.FetchMaxBytes, cfg.Network.FetchTimeout, webfetch.WithAudit(t.record))
	return webfetch.Tool(f), nil
}

// take returns and forgets the call's network summary ("" when it made
// no connection).
func (t *netTracker) take(call string) string {
	if t == nil || call == "" {
		return ""
	}
	t.mu.Lock()
	c := t.calls[call]
	delete(t.calls, call)
	t.mu.Unlock()
	if c == nil {
		return ""
	}
	var parts []string
	if len(c.contacted.names) > 0 {
		parts = append(parts, "contacted "+c.contacted.String())
	}
	if len(c.refused.names) > 0 {
		parts = append(parts, "refused "+c.refused.String())
	}
	return fmt.Sprintf("Network: %s.", strings.Join(parts, "; "))
}
