package egress

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadHost reports a host that is neither a valid DNS name nor a valid
// address.
var ErrBadHost = errors.New("invalid host")

// parseLiteral reports whether host is an IP literal and, if so, which
// address it names. Bracketed and bare IPv6 are accepted (zones are not).
// A host whose last label is numeric (decimal, 0-prefixed octal or
// 0x-prefixed hex) is an IPv4 literal in the spelling inet_aton accepts:
// "2130706433", "0x7f.1", "0177.0.0.1" and "127.1" all name 127.0.0.1.
// Such a host that does not parse is an error with isLiteral true: it is
// never looked up as a name.
func parseLiteral(host string) (addr netip.Addr, isLiteral bool, err error) {
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return netip.Addr{}, true, ErrBadHost
		}
		host = host[1 : len(host)-1]
		if !strings.Contains(host, ":") {
			return netip.Addr{}, true, ErrBadHost
		}
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return netip.Addr{}, true, ErrBadHost
		}
		return a, true, nil
	}
	h := strings.TrimSuffix(host, ".")
	labels := strings.Split(h, ".")
	if !numericLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	a, ok := inetAton(labels)
	if !ok {
		return netip.Addr{}, true, ErrBadHost
	}
	return a, true, nil
}

// numericLabel is the WHATWG "ends in a number" test for one label.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for _, c := range s[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// inetAton parses 1 to 4 parts the way BSD inet_aton does: with n parts,
// the first n-1 are single bytes and the last fills the remaining bytes.
func inetAton(parts []string) (netip.Addr, bool) {
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := atonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(vals)
	for _, v := range vals[:n-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var ip uint32
	for i, v := range vals[:n-1] {
		ip |= uint32(v) << (24 - 8*i)
	}
	ip |= uint32(vals[n-1])
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

func atonPart(p string) (uint64, bool) {
	if p == "" || len(p) > 34 {
		return 0, false
	}
	base, digits := 10, p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" { // "0x" alone is 0 for inet_aton
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	for _, c := range digits {
		if c == '+' || c == '-' || c == '_' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// NormalizeHost lower-cases host and strips one trailing dot; it refuses
// anything that is not a DNS name made of letters, digits, '-' and '_'
// (IDNs must arrive in their xn-- form). IP literals are returned in
// netip's canonical spelling.
func NormalizeHost(host string) (string, netip.Addr, error) {
	a, lit, err := parseLiteral(host)
	if lit {
		if err != nil {
			return "", netip.Addr{}, err
		}
		return a.String(), a, nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || len(h) > 253 {
		return "", netip.Addr{}, ErrBadHost
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 {
			return "", netip.Addr{}, ErrBadHost
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", netip.Addr{}, ErrBadHost
			}
		}
	}
	return h, netip.Addr{}, nil
}
