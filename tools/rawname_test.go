package tools

import (
	"testing"
	"unicode/utf8"
)

func TestEncodeName(t *testing.T) {
	cases := []struct{ raw, shown string }{
		{"plain.txt", "plain.txt"},
		{"café.txt", "café.txt"},
		{"caf\xe9.txt", `caf\xe9.txt`},
		{"\xff\xfe", `\xff\xfe`},
		{`back\slash`, `back\slash`},           // valid, no escape-like text: as is
		{`a\x41b`, `a\x5cx41b`},                // valid but reads as an escape
		{"caf\xe9\\x.txt", `caf\xe9\x5cx.txt`}, // invalid with a backslash
		{"dir/sub\x80/f", `dir/sub\x80/f`},     // paths too
		{"\xe2\x82", `\xe2\x82`},               // a cut rune
		{`trailing\x4`, `trailing\x4`},         // not an escape: too short
		{"é\xc3", `é\xc3`},
	}
	for _, tc := range cases {
		got := EncodeName(tc.raw)
		if got != tc.shown {
			t.Errorf("EncodeName(%q) = %q, want %q", tc.raw, got, tc.shown)
		}
		if !utf8.ValidString(got) {
			t.Errorf("EncodeName(%q) = %q is not UTF-8", tc.raw, got)
		}
		if back := decodeName(got); back != tc.raw {
			t.Errorf("decodeName(%q) = %q, want %q", got, back, tc.raw)
		}
	}
	if got := decodeName(`caf\xC3\xA9`); got != "café" {
		t.Errorf("upper-case hex: %q", got)
	}
}

func FuzzNameRoundTrip(f *testing.F) {
	for _, s := range []string{"a", "caf\xe9", `a\x41`, `\x5c`, "\\", `\x`, "\xff\\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EncodeName(s)
		if !utf8.ValidString(e) {
			t.Fatalf("EncodeName(%q) = %q is not UTF-8", s, e)
		}
		if d := decodeName(e); d != s {
			t.Fatalf("decodeName(EncodeName(%q)) = %q (via %q)", s, d, e)
		}
	})
}
