package sandbox

import "github.com/agentbox/agentbox/sandbox/egress"

// Network is what a backend's egress proxy reports to and asks of the
// host side when network.mode is allowlist (sandbox/egress). The zero
// value logs every connection and refuses destinations no rule covers.
type Network struct {
	// Audit receives every connection attempt.
	Audit egress.AuditFunc
	// Approver is asked about destinations no rule covers.
	Approver egress.Approver
}

// OpenOption changes what Open gives the backend.
type OpenOption func(*Network)

// WithNetwork sets the network hooks.
func WithNetwork(n Network) OpenOption { return func(o *Network) { *o = n } }
