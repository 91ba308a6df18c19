package classifier

import "strings"

// hSed: sed is read-only without -i, -f and without script commands that
// write files or run programs (w, W, e, s///w, s///e).
func hSed(a *analyzer, c *call) {
	scriptSeen := false
	var scripts []int
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if f.unknown() {
			if f.mayBeOption() || !scriptSeen {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be a sed option or script")
				return
			}
			continue
		}
		switch {
		case v == "--" || v == "-":
			continue
		case strings.HasPrefix(v, "--"):
			n, _, has := strings.Cut(v[2:], "=")
			switch {
			case n == "":
			case strings.HasPrefix("in-place", n) || strings.HasPrefix("file", n):
				a.flag(c, i, Dangerous, "sed.in_place", "--"+n+" edits files in place or reads the script from a file")
				return
			case strings.HasPrefix("expression", n) && len(n) >= 2:
				scriptSeen = true
				if has {
					// The value follows '='; check it as a script.
					if !sedScriptSafe(v[strings.IndexByte(v, '=')+1:]) {
						a.flag(c, i, Dangerous, "sed.script", "the sed script writes files or runs commands")
						return
					}
				} else if i+1 < len(c.args) {
					i++
					scripts = append(scripts, i)
				}
			case strings.HasPrefix("quiet", n) || strings.HasPrefix("silent", n) || strings.HasPrefix("regexp-extended", n) ||
				strings.HasPrefix("separate", n) || strings.HasPrefix("unbuffered", n) || strings.HasPrefix("null-data", n) ||
				strings.HasPrefix("posix", n) || strings.HasPrefix("debug", n) || strings.HasPrefix("sandbox", n) ||
				strings.HasPrefix("line-length", n) || strings.HasPrefix("binary", n) || strings.HasPrefix("zero-terminated", n):
				if n == "s" || n == "se" || n == "d" || n == "l" || n == "b" {
					// Ambiguous abbreviations: sed rejects them; stay safe.
				}
			default:
				a.flag(c, i, Dangerous, "sed.option", "--"+n+" is not a known read-only sed option")
				return
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'n', 'E', 'r', 's', 'u', 'z', 'b':
				case 'l':
					if j == len(v)-1 {
						i++
					}
					j = len(v)
				case 'e':
					scriptSeen = true
					if j == len(v)-1 {
						if i+1 < len(c.args) {
							i++
							scripts = append(scripts, i)
						}
					} else if !sedScriptSafe(v[j+1:]) {
						a.flag(c, i, Dangerous, "sed.script", "the sed script writes files or runs commands")
						return
					}
					j = len(v)
				case 'i':
					a.flag(c, i, Dangerous, "sed.in_place", "-i edits files in place")
					return
				case 'f':
					a.flag(c, i, Dangerous, "sed.script_file", "-f reads the sed script from a file")
					return
				default:
					a.flag(c, i, Dangerous, "sed.option", "-"+string(v[j])+" is not a known read-only sed option")
					return
				}
			}
		default:
			if !scriptSeen {
				scriptSeen = true
				scripts = append(scripts, i)
			}
		}
	}
	for _, i := range scripts {
		if c.args[i].unknown() {
			a.flag(c, i, Dangerous, "sed.script", "the sed script is only known at run time")
			continue
		}
		if !sedScriptSafe(c.args[i].val) {
			a.flag(c, i, Dangerous, "sed.script", "the sed script writes files or runs commands (w, W, e, or s///w, s///e), or is not understood")
		}
	}
}

// sedScriptSafe parses a GNU sed script and accepts it only when every
// command is known and none writes a file or runs a program. It mirrors
// GNU sed's handling of bracket expressions in regexes and rejects
// scripts where the two could disagree.
func sedScriptSafe(s string) bool {
	p := sedParser{s: s}
	return p.script()
}

type sedParser struct {
	s string
	i int
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }
func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sedParser) script() bool {
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			return true
		}
		if p.peek() == '#' {
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
			continue
		}
		if !p.address() {
			return false
		}
		p.skipSpace()
		if p.peek() == ',' {
			p.i++
			p.skipSpace()
			if !p.address() {
				return false
			}
			p.skipSpace()
		}
		for p.peek() == '!' {
			p.i++
			p.skipSpace()
		}
		if !p.command() {
			return false
		}
	}
}

func (p *sedParser) address() bool {
	switch ch := p.peek(); {
	case ch >= '0' && ch <= '9':
		for !p.eof() && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '~') {
			p.i++
		}
	case ch == '+' || ch == '~':
		p.i++
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	case ch == '$':
		p.i++
	case ch == '/':
		p.i++
		if !p.regex('/') {
			return false
		}
		p.flagsIM()
	case ch == '\\':
		p.i++
		if p.eof() {
			return false
		}
		d := p.s[p.i]
		if d == '\n' || d == '\\' {
			return false
		}
		p.i++
		if !p.regex(d) {
			return false
		}
		p.flagsIM()
	}
	return true
}

func (p *sedParser) flagsIM() {
	for !p.eof() && (p.s[p.i] == 'I' || p.s[p.i] == 'M') {
		p.i++
	}
}

// regex skips to just past the closing delimiter d.
func (p *sedParser) regex(d byte) bool {
	for !p.eof() {
		ch := p.s[p.i]
		switch {
		case ch == '\\':
			p.i += 2
		case ch == '\n' && d != '\n':
			return false
		case ch == '[' && d != '[':
			if !p.bracket() {
				return false
			}
		case ch == d:
			p.i++
			return true
		default:
			p.i++
		}
	}
	return false
}

// bracket skips a bracket expression; a backslash inside one is rejected
// because sed implementations disagree on it.
func (p *sedParser) bracket() bool {
	p.i++ // [
	if p.peek() == '^' {
		p.i++
	}
	if p.peek() == ']' {
		p.i++
	}
	for !p.eof() {
		ch := p.s[p.i]
		switch {
		case ch == '\\' || ch == '\n':
			return false
		case ch == '[' && p.i+1 < len(p.s) && strings.IndexByte(":.=", p.s[p.i+1]) >= 0:
			end := string(p.s[p.i+1]) + "]"
			k := strings.Index(p.s[p.i+2:], end)
			if k < 0 {
				return false
			}
			p.i += 2 + k + 2
		case ch == ']':
			p.i++
			return true
		default:
			p.i++
		}
	}
	return false
}

// toEOL skips to the end of the line (labels, a/i/c text, r filenames).
func (p *sedParser) toEOL(stopSemicolon bool) {
	for !p.eof() && p.s[p.i] != '\n' && !(stopSemicolon && p.s[p.i] == ';') {
		if p.s[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
}

func (p *sedParser) command() bool {
	if p.eof() {
		return false
	}
	ch := p.s[p.i]
	p.i++
	switch ch {
	case '{':
		return true // a block: commands follow directly
	case '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'x', 'n', 'N', 'p', 'P', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		p.skipSpace()
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	case 'b', 't', 'T', ':':
		// GNU sed ends a label at ';' too (`:a;w x` defines a and then
		// writes x); other seds keep the ';' in the label. Reading the rest
		// as commands is right for GNU and only stricter elsewhere.
		p.skipSpace()
		p.toEOL(true)
	case 'a', 'i', 'c':
		p.toEOL(false)
	case 'r', 'R':
		p.toEOL(false)
	case 'v':
		p.toEOL(true)
	case 'y':
		if p.eof() {
			return false
		}
		d := p.s[p.i]
		p.i++
		if d == '\\' || d == '\n' || !p.plain(d) || !p.plain(d) {
			return false
		}
	case 's':
		if p.eof() {
			return false
		}
		d := p.s[p.i]
		p.i++
		if d == '\\' || d == '\n' || !p.regex(d) || !p.plain(d) {
			return false
		}
		for !p.eof() {
			f := p.s[p.i]
			if f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9' {
				p.i++
				continue
			}
			break
		}
	default:
		return false // w, W, e and anything unknown
	}
	p.skipSpace()
	if p.eof() {
		return true
	}
	switch p.s[p.i] {
	case ';', '\n', '}', '#':
		return true
	}
	return false
}

// plain skips a replacement or y operand to past the delimiter d.
func (p *sedParser) plain(d byte) bool {
	for !p.eof() {
		ch := p.s[p.i]
		switch {
		case ch == '\\':
			p.i += 2
		case ch == d:
			p.i++
			return true
		default:
			p.i++
		}
	}
	return false
}
