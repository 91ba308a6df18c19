// Package termtext makes untrusted text safe to print on a terminal. It
// is the one place agentbox escapes what a command, a path, a model or a
// file could smuggle to the operator's screen: escape sequences (CSI,
// OSC 52 clipboard writes, ...), C1 controls, DEL, backspace and carriage
// return that redraw a line, bidi overrides that reorder it, and invalid
// UTF-8. Escaped characters stay visible: `\x1b`, `\r`, `\u009b`,
// `\u202e`; an invalid byte shows as `\xff`. It imports only the
// standard library, so any package may use it. Safe for concurrent use.
package termtext

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every character a terminal could act on escaped,
// keeping newlines and tabs: for multi-line text such as file content,
// diffs and command output shown to a person.
func Escape(s string) string { return escape(s, false) }

// Line returns s escaped for one line of output: like Escape, and newlines
// and tabs are escaped too (`\n`, `\t`), so the text cannot start a line
// of its own. For summaries, commands, reasons and paths.
func Line(s string) string { return escape(s, true) }

// escape writes nothing extra when s is already safe (the common case).
func escape(s string, oneLine bool) string {
	i := firstUnsafe(s, oneLine)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case !unsafeRune(r, oneLine):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		case r <= 0xffff:
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			writeHex(&b, `\U`, uint32(r), 8)
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the byte offset of the first character to escape, or -1.
func firstUnsafe(s string, oneLine bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c), oneLine) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r, oneLine) {
			return i
		}
		i += size
	}
	return -1
}

// unsafeRune reports whether r must be escaped: C0 controls (but newline
// and tab in multi-line text), DEL, C1 controls, format characters
// (bidi embeddings, overrides and isolates, zero-width characters, BOM,
// tag characters), and the Unicode line and paragraph separators.
func unsafeRune(r rune, oneLine bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return oneLine
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r < 0xa0:
		return true // C1
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[(v>>(4*uint(i)))&0xf])
	}
}

// JSON returns encoded JSON (as encoding/json writes it: C0 controls
// already escaped, invalid UTF-8 already replaced) with every other
// character Escape would escape written as a \uXXXX escape instead. The
// document decodes to exactly the same values, and a terminal it is
// printed on sees no DEL, C1 control or bidi override.
func JSON(b []byte) []byte {
	s := string(b)
	if firstUnsafe(s, false) < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = append(out, `\ufffd`...)
		case !unsafeRune(r, false):
			out = append(out, s[i:i+size]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		default:
			out = appendU(out, r)
		}
		i += size
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	var b strings.Builder
	writeHex(&b, `\u`, uint32(r), 4)
	return append(out, b.String()...)
}
