package egress

import (
	"net"
	"net/netip"
)

// Address classes the dialer refuses.
const (
	ClassLoopback    = "loopback"
	ClassPrivate     = "private"
	ClassLinkLocal   = "link-local"
	ClassCGNAT       = "cgnat"
	ClassULA         = "unique-local"
	ClassMulticast   = "multicast"
	ClassUnspecified = "unspecified"
	ClassReserved    = "reserved"
	ClassMetadata    = "metadata"
	ClassHost        = "host-address"
)

var refusedPrefixes = []struct {
	p     netip.Prefix
	class string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), ClassUnspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), ClassCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), ClassReserved}, // IETF protocol assignments, 192.0.0.192 metadata
	{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), ClassReserved}, // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), ClassReserved}, // includes 255.255.255.255
	{netip.MustParsePrefix("168.63.129.16/32"), ClassMetadata},
	{netip.MustParsePrefix("::/128"), ClassUnspecified},
	{netip.MustParsePrefix("::1/128"), ClassLoopback},
	{netip.MustParsePrefix("100::/64"), ClassReserved}, // discard
	{netip.MustParsePrefix("64:ff9b:1::/48"), ClassPrivate},
	{netip.MustParsePrefix("2001::/32"), ClassReserved}, // Teredo hides the IPv4 it reaches
	{netip.MustParsePrefix("fc00::/7"), ClassULA},
	{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), ClassReserved}, // deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	v4compat  = netip.MustParsePrefix("::/96")
)

// Classifier judges resolved addresses. Safe for concurrent use.
type Classifier struct {
	// Local returns the addresses of the host and of the engine's bridge;
	// it is called at every check (interfaces come and go). nil means the
	// host's interface addresses (net.InterfaceAddrs).
	Local func() []netip.Addr
}

// hostAddrs returns the addresses of every interface of this host.
func hostAddrs() []netip.Addr {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// Class returns why a is refused, or "" when it is a public address.
// IPv4 carried in IPv6 (v4-mapped, v4-compatible, NAT64 64:ff9b::/96,
// 6to4) is judged as the IPv4 it carries.
func (c *Classifier) Class(a netip.Addr) string { return c.class(a, c.locals()) }

// locals returns the addresses of the host and of the engine's bridge.
func (c *Classifier) locals() []netip.Addr {
	if c.Local == nil {
		return hostAddrs()
	}
	return c.Local()
}

// class is Class against the given host addresses (one look-up serves
// every answer of a name).
func (c *Classifier) class(a netip.Addr, local []netip.Addr) string {
	if !a.IsValid() {
		return ClassUnspecified
	}
	a = a.WithZone("").Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a) || (v4compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback()):
			return c.class(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), local)
		case sixToFour.Contains(a):
			return c.class(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), local)
		}
	}
	for _, r := range refusedPrefixes {
		if r.p.Contains(a) {
			return r.class
		}
	}
	for _, l := range local {
		if l.Unmap() == a {
			return ClassHost
		}
	}
	return ""
}
