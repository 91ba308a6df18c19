package termtext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, line, multi string
	}{
		{"plain", "ls -la src/", "ls -la src/", "ls -la src/"},
		{"unicode kept", "grep 'héllo 世界 🙂'", "grep 'héllo 世界 🙂'", "grep 'héllo 世界 🙂'"},
		{"backslash kept", `sed 's/\n/ /'`, `sed 's/\n/ /'`, `sed 's/\n/ /'`},
		{"CSI erase line", "rm -rf ~\x1b[2K\x1b[1Gls", `rm -rf ~\x1b[2K\x1b[1Gls`, `rm -rf ~\x1b[2K\x1b[1Gls`},
		{"CSI cursor up", "x\x1b[1A\x1b[2Kread-only", `x\x1b[1A\x1b[2Kread-only`, `x\x1b[1A\x1b[2Kread-only`},
		{"OSC 52 BEL", "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07", `\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07`, `\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07`},
		{"OSC 52 ST", "\x1b]52;c;eA==\x1b\\", `\x1b]52;c;eA==\x1b\`, `\x1b]52;c;eA==\x1b\`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"C1 OSC", "\u009d52;c;eA==\u009c", `\u009d52;c;eA==\u009c`, `\u009d52;c;eA==\u009c`},
		{"BEL", "beep\a", `beep\x07`, `beep\x07`},
		{"backspace", "rm -rf /\b\b\b\bls  ", `rm -rf /\x08\x08\x08\x08ls  `, `rm -rf /\x08\x08\x08\x08ls  `},
		{"CR", "evil\rgood", `evil\rgood`, `evil\rgood`},
		{"DEL", "a\x7fb", `a\x7fb`, `a\x7fb`},
		{"NUL", "a\x00b", `a\x00b`, `a\x00b`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"CRLF", "a\r\nb", `a\r\nb`, "a\\r\nb"},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"raw C1 byte", "a\x9bb", `a\x9bb`, `a\x9bb`},
		{"bidi RLO", "ls \u202eexe.sh", `ls \u202eexe.sh`, `ls \u202eexe.sh`},
		{"bidi isolates", "\u2066a\u2069\u200f", `\u2066a\u2069\u200f`, `\u2066a\u2069\u200f`},
		{"zero width and BOM", "a\u200bb\ufeff", `a\u200bb\ufeff`, `a\u200bb\ufeff`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"tag character", "a\U000e0041", `a\U000e0041`, `a\U000e0041`},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Escape(tt.in); got != tt.multi {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.multi)
			}
		})
	}
}

// The result never holds a byte a terminal acts on, whatever the input.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"\x1b[2J", "\u009b", "\xff\xfe", "a\u202eb", "\r\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Line(s), Escape(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("result %q is not valid UTF-8", got)
			}
			for _, r := range got {
				if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 || r == 0x202e {
					t.Fatalf("result %q holds %U", got, r)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line(%q) holds a newline or tab", s)
		}
	})
}

func ExampleLine() {
	fmt.Println(Line("rm -rf ~\x1b[1A\x1b[2Kls\n\u202e"))
	// Output: rm -rf ~\x1b[1A\x1b[2Kls\n\u202e
}

func TestJSON(t *testing.T) {
	tests := []string{"plain", "a\u009bb", "\x7f", "\u202eexe", "tag\U000e0041", "\x1b[2J", "é世🙂", "a\nb\tc"}
	for _, s := range tests {
		enc, err := json.MarshalIndent(map[string]any{"s": s, "list": []string{s}}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(enc)
		var back map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s does not decode: %v", s, got, err)
		}
		if back["s"] != s {
			t.Errorf("%q came back as %q", s, back["s"])
		}
		for _, r := range string(got) {
			if r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 || unicode.Is(unicode.Cf, r) {
				t.Errorf("%q: output holds %U raw: %s", s, r, got)
			}
		}
	}
}
