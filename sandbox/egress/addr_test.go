package egress

import (
	"context"
	"net/netip"
	"testing"
)

func TestClassifier(t *testing.T) {
	own := netip.MustParseAddr("192.0.2.10")
	c := &Classifier{Local: func() []netip.Addr { return []netip.Addr{own} }}
	for in, want := range map[string]string{
		"127.0.0.1": ClassLoopback, "127.9.9.9": ClassLoopback, "::1": ClassLoopback,
		"10.1.2.3": ClassPrivate, "172.31.0.1": ClassPrivate, "192.168.1.1": ClassPrivate,
		"169.254.169.254": ClassLinkLocal, "fe80::1": ClassLinkLocal,
		"100.64.0.1": ClassCGNAT, "100.100.100.200": ClassCGNAT,
		"fd00:ec2::254": ClassULA, "fc00::1": ClassULA,
		"224.0.0.1": ClassMulticast, "ff02::1": ClassMulticast,
		"0.0.0.0": ClassUnspecified, "::": ClassUnspecified,
		"255.255.255.255": ClassReserved, "192.0.0.192": ClassReserved,
		"168.63.129.16":    ClassMetadata,
		"::ffff:127.0.0.1": ClassLoopback, "::ffff:169.254.169.254": ClassLinkLocal,
		"64:ff9b::7f00:1": ClassLoopback, "64:ff9b::a9fe:a9fe": ClassLinkLocal, "64:ff9b::c000:20a": ClassHost,
		"64:ff9b:1::1":                         ClassPrivate,
		"2002:7f00:1::1":                       ClassLoopback, // 6to4 of 127.0.0.1
		"::127.0.0.1":                          ClassLoopback, // v4-compatible
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": ClassReserved, // Teredo
		"192.0.2.10":                           ClassHost,
		"::ffff:192.0.2.10":                    ClassHost,
		"192.0.2.11":                           "", "2001:db8::1": "", "64:ff9b::c000:20b": "",
	} {
		if got := c.Class(netip.MustParseAddr(in)); got != want {
			t.Errorf("Class(%s) = %q; want %q", in, got, want)
		}
	}
}

func TestHostAddrsIncludesInterfaces(t *testing.T) {
	as := hostAddrs()
	if len(as) == 0 {
		t.Fatal("no interface addresses read")
	}
	c := &Classifier{}
	for _, a := range as {
		if c.Class(a) == "" {
			t.Errorf("own address %s not refused by the default classifier", a)
		}
	}
}

// The host's addresses are looked up once per name, not once per answer.
func TestResolveLooksUpLocalOnce(t *testing.T) {
	var n int
	c := &Classifier{Local: func() []netip.Addr { n++; return nil }}
	p, err := NewPolicy([]string{"many.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGate(p, WithClassifier(c), WithResolver(multiResolver{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::1")}))
	if _, err := g.Resolve(context.Background(), Target{Host: "many.test", Port: 443}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("host addresses looked up %d times for 3 answers", n)
	}
}

type multiResolver []netip.Addr

func (m multiResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return m, nil
}
