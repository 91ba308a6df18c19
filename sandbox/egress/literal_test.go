package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseLiteral(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // "" = not a literal
		wantErr bool
	}{
		{in: "example.org"},
		{in: "a1.example.org"},
		{in: "127.0.0.1", want: "127.0.0.1"},
		{in: "2130706433", want: "127.0.0.1"},
		{in: "0x7f.1", want: "127.0.0.1"},
		{in: "0X7F.0.0.1", want: "127.0.0.1"},
		{in: "0177.0.0.1", want: "127.0.0.1"},
		{in: "127.1", want: "127.0.0.1"},
		{in: "017700000001", want: "127.0.0.1"},
		{in: "0x7f000001", want: "127.0.0.1"},
		{in: "169.254.43518", want: "169.254.169.254"},
		{in: "0xa9fea9fe", want: "169.254.169.254"},
		{in: "127.0.0.1.", want: "127.0.0.1"},
		{in: "[::1]", want: "::1"},
		{in: "::ffff:127.0.0.1", want: "::ffff:127.0.0.1"},
		{in: "[64:ff9b::7f00:1]", want: "64:ff9b::7f00:1"},
		{in: "fe80::1%eth0", wantErr: true},
		{in: "256.0.0.1", wantErr: true},
		{in: "1.2.3.4.5", wantErr: true},
		{in: "4294967296", wantErr: true},
		{in: "08.0.0.1", wantErr: true},
		{in: "evil.0x10", wantErr: true}, // ends in a number: never a name
		{in: "foo.123", wantErr: true},
		{in: "[127.0.0.1]", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			a, lit, err := parseLiteral(tc.in)
			switch {
			case tc.wantErr:
				if !lit || err == nil {
					t.Fatalf("parseLiteral(%q) = %v, %v, %v; want a refused literal", tc.in, a, lit, err)
				}
			case tc.want == "":
				if lit || err != nil {
					t.Fatalf("parseLiteral(%q) = %v, %v, %v; want a name", tc.in, a, lit, err)
				}
			default:
				if !lit || err != nil || a != netip.MustParseAddr(tc.want) {
					t.Fatalf("parseLiteral(%q) = %v, %v, %v; want %s", tc.in, a, lit, err, tc.want)
				}
			}
		})
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.ORG.": "example.org", "a_b.example": "a_b.example", "xn--bcher-kva.example": "xn--bcher-kva.example",
		"0x7f.1": "127.0.0.1", "[::FFFF:7f00:1]": "::ffff:127.0.0.1",
	} {
		if got, _, err := NormalizeHost(in); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "a..b", "bücher.example", "a b", "a/b", "a@b", strings.Repeat("a", 64) + ".x"} {
		if got, _, err := NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) = %q; want an error", in, got)
		}
	}
}

// FuzzParseLiteral: no panics; a literal's canonical form parses back to
// the same address; a name normalizes to itself.
func FuzzParseLiteral(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "[::1]", "example.org", "1.2.3.4.5", "0x", "00", "::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, lit, err := parseLiteral(s)
		if lit && err == nil {
			b, lit2, err2 := parseLiteral(a.String())
			if !lit2 || err2 != nil || b != a {
				t.Fatalf("%q → %v does not round-trip: %v %v %v", s, a, b, lit2, err2)
			}
		}
		if !lit && err != nil {
			t.Fatalf("%q: error without literal", s)
		}
		h, addr, err := NormalizeHost(s)
		if err == nil {
			h2, addr2, err2 := NormalizeHost(h)
			if err2 != nil || h2 != h || addr2 != addr {
				t.Fatalf("NormalizeHost(%q) = %q is not stable: %q %v", s, h, h2, err2)
			}
			if !addr.IsValid() && strings.ContainsAny(h, "[]:%@/ ") {
				t.Fatalf("NormalizeHost(%q) = %q: a name with forbidden characters", s, h)
			}
		}
	})
}
