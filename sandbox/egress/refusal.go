package egress

import (
	"errors"
	"fmt"
)

// ErrRefused is wrapped by every *Refusal.
var ErrRefused = errors.New("egress refused")

// Reasons a connection is refused; they are the X-Agentbox-Error values.
const (
	ReasonDenied          = "denied"               // an explicit network.deny rule
	ReasonNotAllowed      = "not-allowed"          // no rule allows it and nobody approved it
	ReasonLiteral         = "ip-literal"           // an IP address that is not listed
	ReasonAddress         = "resolved-private"     // the name resolves to a refused address
	ReasonResolve         = "resolve-failed"       // the name does not resolve
	ReasonDial            = "connect-failed"       // the checked address did not answer
	ReasonApprovalDenied  = "approval-denied"      // a person said no
	ReasonApprovalTimeout = "approval-timeout"     // nobody answered in time
	ReasonClientGone      = "client-gone"          // the client left while its tunnel waited for an approval or its dial
	ReasonPending         = "too-many-pending"     // too many connections of one call wait for approval
	ReasonTooMany         = "too-many-connections" // the proxy, or this call, has too many connections open
	ReasonSNIMismatch     = "sni-mismatch"         // TLS server name differs from the CONNECT host
	ReasonNoSNI           = "no-sni"               // TLS without a server name
	ReasonECH             = "ech"                  // encrypted ClientHello: the real name is hidden
	ReasonNotTLS          = "not-tls"              // a CONNECT tunnel that does not carry TLS
	ReasonBadRequest      = "bad-request"          // malformed or not a proxy request
	ReasonSmuggling       = "smuggling"            // ambiguous framing (CL+TE, several lengths, ...)
	ReasonHostMismatch    = "host-mismatch"        // Host header differs from the request target
	ReasonUserinfo        = "userinfo"             // credentials in the URL
	ReasonUnsupported     = "unsupported"          // a protocol or method the proxy does not carry
	ReasonAuth            = "unauthenticated"      // the caller did not prove who it is
	ReasonNoNetwork       = "network-none"         // network.mode is none
)

// Refusal is a refused connection, written for the person or model that
// sees it: what was refused and which setting would allow it. It never
// names a resolved address (the audit log has it).
type Refusal struct {
	Reason  string
	Detail  string
	Setting string
}

func (r *Refusal) Error() string {
	s := "agentbox network: " + r.Reason
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	if r.Setting != "" {
		s += " (to allow it: " + r.Setting + ")"
	}
	return s
}

func (r *Refusal) Unwrap() error { return ErrRefused }

func refusef(reason, setting, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Setting: setting, Detail: fmt.Sprintf(format, args...)}
}

// allowSetting is the setting that allows host: only the user config can
// add to network.allow, so a model told to "add it" does not edit a
// project config that cannot.
func allowSetting(host string) string {
	return fmt.Sprintf("add %q to network.allow in the user config (a project config can only remove entries)", host)
}

// AsRefusal returns err's *Refusal, or a generic one for any other error.
func AsRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return &Refusal{Reason: ReasonDial, Detail: "the connection failed"}
}
