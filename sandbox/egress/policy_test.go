package egress

import (
	"errors"
	"testing"
)

func TestPolicyDecide(t *testing.T) {
	type c struct {
		host   string
		port   uint16
		want   Verdict
		reason string
	}
	for _, tc := range []struct {
		name        string
		allow, deny []string
		cases       []c
	}{
		{"domain and wildcard", []string{"example.org", "*.example.net:443"}, nil, []c{
			{"example.org", 443, Allow, ""},
			{"EXAMPLE.org.", 80, Allow, ""},
			{"sub.example.org", 443, Unknown, ""},
			{"a.example.net", 443, Allow, ""},
			{"a.b.example.net", 443, Allow, ""},
			{"example.net", 443, Unknown, ""},
			{"a.example.net", 80, Unknown, ""},
			{"badexample.net", 443, Unknown, ""},
		}},
		{"explicit deny beats allow", []string{"*.example.org"}, []string{"secret.example.org"}, []c{
			{"a.example.org", 443, Allow, ""},
			{"secret.example.org", 443, Deny, ReasonDenied},
		}},
		{"deny star with an allow", []string{"example.org"}, []string{"*"}, []c{
			{"example.org", 443, Allow, ""},
			{"other.example", 443, Deny, ReasonNotAllowed},
		}},
		{"literals only when listed", []string{"192.0.2.7:443", "[2001:db8::1]", "*"}, nil, []c{
			{"192.0.2.7", 443, Allow, ""},
			{"3221225991", 443, Allow, ""}, // 192.0.2.7 in decimal
			{"192.0.2.7", 80, Deny, ReasonLiteral},
			{"192.0.2.8", 443, Deny, ReasonLiteral},
			{"2130706433", 80, Deny, ReasonLiteral},
			{"0x7f.1", 80, Deny, ReasonLiteral},
			{"[2001:db8::1]", 22, Allow, ""},
			{"anything.example", 443, Allow, ""},
		}},
		{"denied address", nil, []string{"192.0.2.7"}, []c{{"192.0.2.7", 443, Deny, ReasonDenied}}},
		{"preset", []string{"@npm"}, nil, []c{
			{"registry.npmjs.org", 443, Allow, ""},
			{"registry.npmjs.org", 80, Unknown, ""},
		}},
		{"bad host", []string{"*"}, nil, []c{{"a b", 443, Deny, ReasonBadRequest}, {"evil.0x10", 443, Deny, ReasonBadRequest}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(tc.allow, tc.deny)
			if err != nil {
				t.Fatal(err)
			}
			for _, cc := range tc.cases {
				d := p.Decide(cc.host, cc.port)
				if d.Verdict != cc.want {
					t.Errorf("%s:%d = %v (%s); want %v", cc.host, cc.port, d.Verdict, d.By, cc.want)
					continue
				}
				if cc.reason != "" && (d.Refusal == nil || d.Refusal.Reason != cc.reason) {
					t.Errorf("%s:%d refusal = %+v; want %s", cc.host, cc.port, d.Refusal, cc.reason)
				}
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, s := range []string{"", "*.", "ex*ample.org", "a.*.org", "example.org:0", "example.org:99999", "[::1", "*.1.2.3.4", "@nope", "a b"} {
		if _, err := NewPolicy([]string{s}, nil); !errors.Is(err, ErrBadRule) {
			t.Errorf("NewPolicy(%q) = %v; want ErrBadRule", s, err)
		}
	}
}

func TestPresetsParse(t *testing.T) {
	for _, name := range presetNames() {
		rs, err := parseRules([]string{name})
		if err != nil || len(rs) == 0 {
			t.Errorf("preset %s: %v", name, err)
		}
		for _, r := range rs {
			if r.Port == 0 || r.Addr.IsValid() || r.All {
				t.Errorf("preset %s: %q must be a domain with a port", name, r.Text)
			}
		}
	}
}
