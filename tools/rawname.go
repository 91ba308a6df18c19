package tools

import (
	"strings"
	"unicode/utf8"
)

// File names are bytes; JSON strings (what models read and write) are
// UTF-8. A name that is not valid UTF-8 would reach the model as
// "caf\ufffd.txt" and could never be named again. So the tools show such
// names with each byte that is not part of valid UTF-8 as \xHH (lower-case
// hex), and every path a tool is given has its \xHH escapes decoded back
// into bytes (Backfill does it for every path field):
//
//	caf<0xE9>.txt  is shown as  caf\xe9.txt  and  caf\xe9.txt  names it.
//
// To keep the form unambiguous a backslash in an escaped name is written
// \x5c, and a valid name is escaped too when it holds text that reads as
// an escape (a literal `a\x41b` is shown as a\x5cx41b); every other name
// is shown as it is. decodeName(EncodeName(n)) == n for every n.

// EncodeName returns name as the tools show it to a model.
func EncodeName(name string) string {
	if utf8.ValidString(name) && !hasEscape(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		c := name[i]
		if c == '\\' {
			b.WriteString(`\x5c`)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && size <= 1 {
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			i++
			continue
		}
		b.WriteString(name[i : i+size])
		i += size
	}
	return b.String()
}

// decodeName turns a name or path as a model wrote it back into bytes:
// every \xHH (either case of hex) becomes that byte.
func decodeName(s string) string {
	if !hasEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if isEscapeAt(s, i) {
			b.WriteByte(unhex(s[i+2])<<4 | unhex(s[i+3]))
			i += 4
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

func hasEscape(s string) bool {
	for i := strings.Index(s, `\x`); i >= 0; {
		if isEscapeAt(s, i) {
			return true
		}
		j := strings.Index(s[i+2:], `\x`)
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

func isEscapeAt(s string, i int) bool {
	return i+3 < len(s) && s[i] == '\\' && s[i+1] == 'x' && isHex(s[i+2]) && isHex(s[i+3])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
