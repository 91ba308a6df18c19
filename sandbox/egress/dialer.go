package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"
)

// Resolver looks names up; *net.Resolver satisfies it. Tests inject their
// own mapping.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a TCP connection to a checked address.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Caller identifies who asks for a connection (from the relay preamble,
// or the host-side tool).
type Caller struct {
	Call    string
	Session string
}

// Question is what an Approver is asked: may this call reach host:port?
type Question struct {
	Caller
	Host string
	Port uint16
	// By, when set by the Gate, is where the Approver may name who
	// decided ("mcp-elicitation", "tty", "non-interactive", "session
	// grant", ...); the decision's By is then that name instead of
	// "approver".
	By *string
}

// Approver decides a destination no rule covers. It returns Allow or
// Deny (anything else counts as Deny). ctx is bounded by the approval
// timeout. Remembering an answer (for the session or the project) is the
// Approver's business.
type Approver func(ctx context.Context, q Question) (Verdict, error)

// Target is a destination that passed the policy and the address check.
type Target struct {
	Host     string         // normalized name or literal
	Port     uint16         //
	Addr     netip.AddrPort // the checked address dialed
	Decision Decision       // who allowed it
	Literal  bool           // Host is an IP literal
}

// Gate is the one implementation of "may this connection happen, and
// open it": policy, approval, resolution, address check, dial. The proxy
// and host-side tools (WebFetch) both go through it.
type Gate struct {
	policy   *Policy
	resolver Resolver
	classify *Classifier
	dial     DialFunc
	approver Approver
	timeout  time.Duration
	pending  int

	mu      sync.Mutex
	waiting map[string]int // call → connections waiting for an approval
}

// GateOption configures a Gate.
type GateOption func(*Gate)

// WithResolver replaces net.DefaultResolver.
func WithResolver(r Resolver) GateOption { return func(g *Gate) { g.resolver = r } }

// WithClassifier replaces the default address classifier.
func WithClassifier(c *Classifier) GateOption { return func(g *Gate) { g.classify = c } }

// WithDial replaces the TCP dialer (tests count dials with it).
func WithDial(d DialFunc) GateOption { return func(g *Gate) { g.dial = d } }

// WithApprover sets who is asked about unknown destinations, and how long
// a connection may wait for the answer (the timeout counts as a deny).
// Without an approver unknown destinations are refused.
func WithApprover(a Approver, timeout time.Duration) GateOption {
	return func(g *Gate) { g.approver, g.timeout = a, timeout }
}

// WithMaxPending caps the connections of one call waiting for an
// approval at once (default 8).
func WithMaxPending(n int) GateOption { return func(g *Gate) { g.pending = n } }

// NewGate builds a Gate over p.
func NewGate(p *Policy, opts ...GateOption) *Gate {
	g := &Gate{policy: p, resolver: net.DefaultResolver, classify: &Classifier{},
		timeout: time.Minute, pending: 8, waiting: map[string]int{}}
	d := &net.Dialer{Timeout: 30 * time.Second}
	g.dial = d.DialContext
	for _, o := range opts {
		o(g)
	}
	return g
}

// Decide runs the policy and, for an unknown destination, the approver.
// It neither resolves nor dials.
func (g *Gate) Decide(ctx context.Context, c Caller, host string, port uint16) (Target, error) {
	h, addr, err := NormalizeHost(host)
	if err != nil {
		return Target{}, refusef(ReasonBadRequest, "", "%q is not a valid host name", host)
	}
	t := Target{Host: h, Port: port, Literal: addr.IsValid()}
	d := g.policy.decide(h, addr, port)
	if d.Verdict == Unknown {
		d = g.ask(ctx, c, h, port)
	}
	t.Decision = d
	if d.Verdict != Allow {
		return t, d.Refusal
	}
	return t, nil
}

func (g *Gate) ask(ctx context.Context, c Caller, h string, port uint16) Decision {
	setting := allowSetting(h) + ", or approve it when asked"
	dest := net.JoinHostPort(h, strconv.Itoa(int(port)))
	if g.approver == nil {
		return Decision{Verdict: Deny, By: "default", Refusal: refusef(ReasonNotAllowed, allowSetting(h),
			"%s is not in network.allow", dest)}
	}
	g.mu.Lock()
	if g.waiting[c.Call] >= g.pending {
		g.mu.Unlock()
		return Decision{Verdict: Deny, By: "default", Refusal: refusef(ReasonPending, setting,
			"%s: this call already has %d connections waiting for an approval", dest, g.pending)}
	}
	g.waiting[c.Call]++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.waiting[c.Call]--; g.waiting[c.Call] <= 0 {
			delete(g.waiting, c.Call)
		}
		g.mu.Unlock()
	}()
	actx, cancel := context.WithTimeoutCause(ctx, g.timeout, errApprovalTimeout)
	defer cancel()
	var name string
	v, err := g.approver(actx, Question{Caller: c, Host: h, Port: port, By: &name})
	by := name
	if by == "" {
		by = "approver"
	}
	switch {
	case errors.Is(context.Cause(actx), ErrClientGone):
		// Whatever the answer, nobody is left to connect for.
		return Decision{Verdict: Deny, By: "proxy", Refusal: refusef(ReasonClientGone, "",
			"%s: the client left before the connection was approved", dest)}
	case err == nil && v == Allow:
		return Decision{Verdict: Allow, By: by}
	case err != nil && errors.Is(context.Cause(actx), errApprovalTimeout):
		return Decision{Verdict: Deny, By: by, Refusal: refusef(ReasonApprovalTimeout, setting,
			"%s: nobody approved the connection within %s", dest, g.timeout)}
	}
	return Decision{Verdict: Deny, By: by, Refusal: refusef(ReasonApprovalDenied, allowSetting(h),
		"%s: the connection was not approved", dest)}
}

var errApprovalTimeout = errors.New("approval timed out")

// ErrClientGone is the cause of a context the proxy cancels when the
// client hangs up while its connection waits for a decision: the
// approver's question is withdrawn, or the look-up or dial abandoned.
var ErrClientGone = errors.New("the client left")

// Resolve looks an allowed target up once and judges every answer: one
// refused address refuses the whole name (an attacker controls which
// answer a client would pick). A literal is not looked up.
func (g *Gate) Resolve(ctx context.Context, t Target) ([]netip.AddrPort, error) {
	var addrs []netip.Addr
	if t.Literal {
		a, _ := netip.ParseAddr(t.Host)
		addrs = []netip.Addr{a}
	} else {
		var err error
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", t.Host)
		if err != nil || len(addrs) == 0 {
			return nil, refusef(ReasonResolve, "", "%s does not resolve", t.Host)
		}
	}
	out := make([]netip.AddrPort, 0, len(addrs))
	var local []netip.Addr // the host's addresses, looked up once when needed
	looked := false
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if r, ok := g.policy.addrDenied(a, t.Port); ok {
			return nil, refusef(ReasonDenied, fmt.Sprintf("remove %q from network.deny", r.Text),
				"%s resolves to an address network.deny lists", t.Host)
		}
		if _, ok := g.policy.addrAllowed(a, t.Port); !ok {
			if !looked {
				local, looked = g.classify.locals(), true
			}
			if class := g.classify.class(a, local); class != "" {
				return nil, refusef(ReasonAddress, "an operator may add that exact address to network.allow",
					"%s resolves to a %s address", t.Host, class)
			}
		}
		out = append(out, netip.AddrPortFrom(a, t.Port))
	}
	return out, nil
}

// Dial resolves t once and connects to the first checked address that
// answers; the name is never looked up again.
func (g *Gate) Dial(ctx context.Context, t Target) (net.Conn, netip.AddrPort, error) {
	aps, err := g.Resolve(ctx, t)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	var last error
	for _, ap := range aps {
		c, err := g.dial(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		last = err
	}
	why := "no answer"
	var se *os.SyscallError
	if errors.As(last, &se) {
		why = se.Err.Error() // the errno text, never the address
	} else if errors.Is(last, context.DeadlineExceeded) {
		why = "timed out"
	}
	return nil, netip.AddrPort{}, &Refusal{Reason: ReasonDial, Detail: fmt.Sprintf("%s:%d did not accept the connection: %s", t.Host, t.Port, why)}
}

// Connect is Decide then Dial.
func (g *Gate) Connect(ctx context.Context, c Caller, host string, port uint16) (net.Conn, Target, error) {
	t, err := g.Decide(ctx, c, host, port)
	if err != nil {
		return nil, t, err
	}
	conn, ap, err := g.Dial(ctx, t)
	t.Addr = ap
	if r := AsRefusal(err); err != nil && (r.Reason == ReasonDial || r.Reason == ReasonResolve) &&
		errors.Is(context.Cause(ctx), ErrClientGone) {
		// The look-up or dial ended because the client left: the
		// destination is not to blame.
		err = refusef(ReasonClientGone, "", "%s: the client left before the connection was made",
			net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port))))
	}
	return conn, t, err
}
