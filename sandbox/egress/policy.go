package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// ErrBadRule reports a network.allow or network.deny entry that does not
// parse.
var ErrBadRule = errors.New("invalid network rule")

// Verdict is what the policy says about a destination.
type Verdict int

const (
	// Unknown: no rule matched; ask (or refuse when nobody can be asked).
	Unknown Verdict = iota
	// Allow: a rule (or an approval) allows it.
	Allow
	// Deny: refused; an explicit deny is never overridden.
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "unknown"
}

// Rule is one parsed entry of network.allow or network.deny.
type Rule struct {
	// Text is the entry as written (for a preset's domain, "@go: name").
	Text string
	// Host is the lower-case domain, without "*." and trailing dot; empty
	// for an address or "*".
	Host string
	// Wildcard: Host matches its subdomains only ("*.example.org" does not
	// match "example.org" itself).
	Wildcard bool
	// All is the rule "*": every destination.
	All bool
	// Addr is the exact address of an address rule.
	Addr netip.Addr
	// Port limits the rule to one port; 0 means any port.
	Port uint16
}

// parseRule parses one entry: "example.org", "*.example.org",
// "example.org:443", "192.0.2.7", "[2001:db8::1]:443", "2001:db8::1" or
// "*". Presets are expanded by NewPolicy, not here.
func parseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	t := strings.TrimSpace(s)
	if t == "*" {
		r.All = true
		return r, nil
	}
	host, port := t, ""
	if strings.HasPrefix(t, "[") {
		i := strings.Index(t, "]")
		if i < 0 {
			return r, fmt.Errorf("%w %q: unclosed [", ErrBadRule, s)
		}
		host, port = t[:i+1], strings.TrimPrefix(t[i+1:], ":")
		if t[i+1:] != "" && !strings.HasPrefix(t[i+1:], ":") {
			return r, fmt.Errorf("%w %q", ErrBadRule, s)
		}
	} else if strings.Count(t, ":") == 1 {
		host, port, _ = strings.Cut(t, ":")
	}
	if port != "" {
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return r, fmt.Errorf("%w %q: bad port", ErrBadRule, s)
		}
		r.Port = uint16(p)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		h, a, err := NormalizeHost(rest)
		if err != nil || a.IsValid() {
			return r, fmt.Errorf("%w %q: a wildcard needs a domain", ErrBadRule, s)
		}
		r.Host, r.Wildcard = h, true
		return r, nil
	}
	if strings.Contains(host, "*") {
		return r, fmt.Errorf("%w %q: '*' only as the first label (\"*.example.org\") or alone", ErrBadRule, s)
	}
	h, a, err := NormalizeHost(host)
	if err != nil {
		return r, fmt.Errorf("%w %q: %v", ErrBadRule, s, err)
	}
	if a.IsValid() {
		r.Addr = a.Unmap()
		return r, nil
	}
	r.Host = h
	return r, nil
}

// matchHost reports whether r matches the normalized destination.
func (r Rule) match(host string, addr netip.Addr, port uint16) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	switch {
	case r.All:
		return true
	case r.Addr.IsValid():
		return addr.IsValid() && addr.Unmap() == r.Addr
	case addr.IsValid():
		return false
	case r.Wildcard:
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// Presets are the named domain sets "@name" expands to, in network.allow
// or network.deny. Registries are HTTPS (:443); revocation responders are
// plain HTTP (:80).
var Presets = map[string][]string{
	"@go":             {"proxy.golang.org:443", "sum.golang.org:443", "index.golang.org:443"},
	"@npm":            {"registry.npmjs.org:443", "registry.yarnpkg.com:443"},
	"@pypi":           {"pypi.org:443", "files.pythonhosted.org:443"},
	"@crates":         {"crates.io:443", "index.crates.io:443", "static.crates.io:443"},
	"@github":         {"github.com:443", "api.github.com:443", "codeload.github.com:443", "objects.githubusercontent.com:443"},
	"@debian":         {"deb.debian.org:80", "deb.debian.org:443", "security.debian.org:80", "security.debian.org:443"},
	"@tls-revocation": {"*.o.lencr.org:80", "*.c.lencr.org:80", "ocsp.digicert.com:80", "crl3.digicert.com:80", "crl4.digicert.com:80", "ocsp.sectigo.com:80", "crl.sectigo.com:80", "ocsp.pki.goog:80", "crl.pki.goog:80", "o.pki.goog:80", "c.pki.goog:80"},
}

// presetNames lists the presets, sorted.
func presetNames() []string {
	out := make([]string, 0, len(Presets))
	for k := range Presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseRules parses entries, expanding presets.
func parseRules(entries []string) ([]Rule, error) {
	var out []Rule
	var errs []error
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if strings.HasPrefix(e, "@") {
			doms, ok := Presets[e]
			if !ok {
				errs = append(errs, fmt.Errorf("%w %q: unknown preset (known: %s)", ErrBadRule, e, strings.Join(presetNames(), ", ")))
				continue
			}
			for _, d := range doms {
				r, err := parseRule(d)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				r.Text = e + ": " + d
				out = append(out, r)
			}
			continue
		}
		r, err := parseRule(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// Policy is the operator's allow and deny lists. Deny wins over allow,
// except the lone rule "*" in deny, which means "refuse whatever is not
// allowed, without asking" (so `deny: ["*"]` plus an allow list is a
// strict allowlist, not a wall).
type Policy struct {
	allow, deny []Rule
	denyAll     bool
}

// NewPolicy parses the lists.
func NewPolicy(allow, deny []string) (*Policy, error) {
	a, errA := parseRules(allow)
	d, errD := parseRules(deny)
	if err := errors.Join(errA, errD); err != nil {
		return nil, err
	}
	p := &Policy{allow: a}
	for _, r := range d {
		if r.All && r.Port == 0 {
			p.denyAll = true
			continue
		}
		p.deny = append(p.deny, r)
	}
	return p, nil
}

// Decision is a verdict with who made it and, for a refusal, why.
type Decision struct {
	Verdict Verdict
	// By names the deciding rule or party: "network.allow \"x\"",
	// "network.deny \"x\"", "approver", "address check", "default".
	By string
	// Refusal is set when Verdict is Deny.
	Refusal *Refusal
}

// Decide judges a destination by name (or literal) and port. host may be
// in any spelling; it is normalized first.
func (p *Policy) Decide(host string, port uint16) Decision {
	h, addr, err := NormalizeHost(host)
	if err != nil {
		return Decision{Verdict: Deny, By: "default", Refusal: &Refusal{Reason: ReasonBadRequest,
			Detail: fmt.Sprintf("%q is not a valid host name", host)}}
	}
	return p.decide(h, addr, port)
}

func (p *Policy) decide(h string, addr netip.Addr, port uint16) Decision {
	dest := net.JoinHostPort(h, strconv.Itoa(int(port)))
	for _, r := range p.deny {
		if r.match(h, addr, port) {
			return Decision{Verdict: Deny, By: fmt.Sprintf("network.deny %q", r.Text), Refusal: &Refusal{
				Reason: ReasonDenied, Detail: fmt.Sprintf("%s is denied by network.deny %q", dest, r.Text),
				Setting: fmt.Sprintf("only the operator can lift it: remove %q from network.deny in the user config (a project config cannot)", r.Text)}}
		}
	}
	for _, r := range p.allow {
		if r.match(h, addr, port) && !(r.All && addr.IsValid()) { // "*" never lets a literal through
			return Decision{Verdict: Allow, By: fmt.Sprintf("network.allow %q", r.Text)}
		}
	}
	if addr.IsValid() {
		return Decision{Verdict: Deny, By: "default", Refusal: &Refusal{Reason: ReasonLiteral,
			Detail:  fmt.Sprintf("%s is an IP address; addresses are reached only when listed", dest),
			Setting: fmt.Sprintf("add %q to network.allow (user config), or use the host name", addr.String())}}
	}
	if p.denyAll {
		return Decision{Verdict: Deny, By: `network.deny "*"`, Refusal: &Refusal{Reason: ReasonNotAllowed,
			Detail:  fmt.Sprintf("%s is not in network.allow and network.deny has \"*\"", dest),
			Setting: allowSetting(h)}}
	}
	return Decision{Verdict: Unknown, By: "default"}
}

// addrAllowed reports whether an allow rule lists exactly this address
// (for this port): the operator's override of the address check.
func (p *Policy) addrAllowed(a netip.Addr, port uint16) (Rule, bool) {
	a = a.Unmap()
	for _, r := range p.allow {
		if r.Addr.IsValid() && r.match("", a, port) {
			return r, true
		}
	}
	return Rule{}, false
}

// addrDenied reports whether a deny rule lists exactly this address.
func (p *Policy) addrDenied(a netip.Addr, port uint16) (Rule, bool) {
	a = a.Unmap()
	for _, r := range p.deny {
		if r.Addr.IsValid() && r.match("", a, port) {
			return r, true
		}
	}
	return Rule{}, false
}
