package tools

import (
	"os/exec"
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
		if back := DecodeName(got); back != tc.raw {
			t.Errorf("DecodeName(%q) = %q, want %q", got, back, tc.raw)
		}
	}
	if got := DecodeName(`caf\xC3\xA9`); got != "café" {
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
		if d := DecodeName(e); d != s {
			t.Fatalf("DecodeName(EncodeName(%q)) = %q (via %q)", s, d, e)
		}
	})
}

// TestPrintfBytes: what WriteFile's script rebuilds with printf %b is the
// exact bytes, for every byte but NUL (which no path holds).
func TestPrintfBytes(t *testing.T) {
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{"plain/path.txt", "caf\xe9.txt", `back\slash\0351`, "trailing newline\n", string(all)} {
		enc := printfBytes(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] >= 0x80 {
				t.Fatalf("printfBytes(%q) = %q holds a non-ASCII byte", s, enc)
			}
		}
		out, err := exec.Command("sh", "-c", `p=$(printf '%bX' "$1"); p=${p%X}; printf '%s' "$p"`, "sh", enc).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("printf %%b of printfBytes(%q) = %q", s, out)
		}
	}
}
