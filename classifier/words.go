package classifier

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/config/pathspec"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// field is one argv element after brace expansion and quote removal.
type field struct {
	val string // the value; run-time parts are shown as their source text
	raw string // source text of the word it came from
	off int    // offset of that word in the top command

	dynamic bool // holds a part only known at run time ($x, $(cmd), $((x)))
	param   bool // holds a parameter expansion
	glob    bool // holds an unquoted glob pattern (*, ?, [...], extglob)
	// lead is the literal text before the first dynamic or glob part; an
	// argument can only start with '-' if lead is empty or does.
	lead    string
	leadEnd bool // lead is the whole value (nothing dynamic or glob)
	procSub bool // the whole word is a process substitution (/dev/fd/N)
	dquoted bool // the whole word is one "..." string: it never splits
	fromNet bool // a substitution in it fetched from the network
	// pat is the word as a path pattern (pathspec syntax): literal text
	// escaped, unquoted glob characters kept, and every part only known
	// at run time written `**` (it may hold anything, slashes too).
	pat string
}

// unknown reports whether the value is not fully known before it runs.
func (f *field) unknown() bool { return f.dynamic || f.glob }

// mayBeOption reports whether the run-time value could start with '-'.
func (f *field) mayBeOption() bool {
	if !f.unknown() {
		return strings.HasPrefix(f.val, "-")
	}
	if f.procSub {
		return false
	}
	return f.lead == "" || f.lead[0] == '-'
}

const maxBraceFields = 4096

// expandWord appends the fields of w to out.
func (a *analyzer) expandWord(w *syntax.Word, out []field) []field {
	raw, off := a.at(w)
	if hasBraces(w) {
		cp := *w
		if syntax.SplitBraces(&cp) {
			if n := braceCount(&cp); n > maxBraceFields {
				a.add(Dangerous, "cap.braces", raw, off, "brace expansion makes too many words to analyse")
				return append(out, a.evalParts(w.Parts, raw, off))
			}
			n := 0
			for bw, err := range expand.BracesSeq(nil, &cp) {
				n++
				if err != nil || n > maxBraceFields {
					a.add(Dangerous, "cap.braces", raw, off, "brace expansion makes too many words to analyse")
					break
				}
				out = append(out, a.evalParts(bw.Parts, raw, off))
			}
			return out
		}
	}
	return append(out, a.evalParts(w.Parts, raw, off))
}

func hasBraces(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// braceCount bounds the number of words a split word expands to.
func braceCount(w *syntax.Word) int {
	n := 1
	for _, p := range w.Parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if b.Sequence {
			k = maxBraceFields + 1
			if len(b.Elems) >= 2 {
				x, y := b.Elems[0].Lit(), b.Elems[1].Lit()
				xi, e1 := strconv.Atoi(x)
				yi, e2 := strconv.Atoi(y)
				switch {
				case e1 == nil && e2 == nil:
					const lim = 1 << 20
					if xi > lim || xi < -lim || yi > lim || yi < -lim {
						k = maxBraceFields + 1
					} else {
						k = max(xi-yi, yi-xi) + 1
					}
				case len(x) == 1 && len(y) == 1:
					k = 64
				}
			}
		} else {
			for _, e := range b.Elems {
				k += braceCount(e)
			}
		}
		if k > maxBraceFields {
			return maxBraceFields + 1
		}
		n *= max(k, 1)
		if n > maxBraceFields {
			return n
		}
	}
	return n
}

// evalParts builds one field from word parts.
func (a *analyzer) evalParts(parts []syntax.WordPart, raw string, off int) field {
	f := field{raw: raw, off: off}
	if len(parts) == 1 {
		// Fast paths for the common plain words.
		switch p := parts[0].(type) {
		case *syntax.Lit:
			if strings.IndexByte(p.Value, '\\') < 0 && globIndex(p.Value) < 0 {
				f.val, f.lead, f.leadEnd = p.Value, p.Value, true
				f.pat = pathspec.EscapeMeta(p.Value)
				return f
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				f.val, f.lead, f.leadEnd = p.Value, p.Value, true
				f.pat = pathspec.EscapeMeta(p.Value)
				return f
			}
		}
	}
	var sb, pb strings.Builder
	leadDone := false
	markLead := func() {
		if !leadDone {
			f.lead = sb.String()
			leadDone = true
		}
	}
	a.evalInto(&sb, &pb, &f, parts, false, markLead)
	f.val = sb.String()
	f.pat = pb.String()
	if !leadDone {
		f.lead = f.val
		f.leadEnd = true
	}
	if len(parts) == 1 {
		switch parts[0].(type) {
		case *syntax.ProcSubst:
			f.procSub = true
		case *syntax.DblQuoted:
			f.dquoted = true
		}
	}
	return f
}

func (a *analyzer) evalInto(sb, pb *strings.Builder, f *field, parts []syntax.WordPart, dq bool, markLead func()) {
	lit := func(v string) {
		sb.WriteString(v)
		pb.WriteString(pathspec.EscapeMeta(v))
	}
	runTime := func() {
		// A run-time part can be anything; consecutive ones are one.
		if !strings.HasSuffix(pb.String(), "**") {
			pb.WriteString("**")
		}
	}
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if dq {
				lit(unescapeDouble(p.Value))
				continue
			}
			if gi := globIndex(p.Value); gi >= 0 {
				// Write the literal text before the glob first so that
				// lead is exact.
				v := p.Value
				lit(unescapeBare(v[:gi]))
				markLead()
				f.glob = true
				sb.WriteString(unescapeBare(v[gi:]))
				pb.WriteString(globPattern(v[gi:]))
				continue
			}
			lit(unescapeBare(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				lit(ansiC(p.Value))
			} else {
				lit(p.Value)
			}
		case *syntax.DblQuoted:
			a.evalInto(sb, pb, f, p.Parts, true, markLead)
		case *syntax.ParamExp:
			markLead()
			f.dynamic, f.param = true, true
			writeRaw(sb, a, p)
			runTime()
			a.paramExp(p)
		case *syntax.CmdSubst:
			markLead()
			f.dynamic = true
			writeRaw(sb, a, p)
			runTime()
			before := a.netSeen
			a.cmdSubst(p.Stmts, p)
			if a.netSeen > before {
				f.fromNet = true
			}
		case *syntax.ProcSubst:
			markLead()
			f.dynamic = true
			writeRaw(sb, a, p)
			runTime()
			before := a.netSeen
			a.cmdSubst(p.Stmts, p)
			if a.netSeen > before {
				f.fromNet = true
			}
		case *syntax.ArithmExp:
			if a.arith(p.X) {
				if n, err := expand.Arithm(&expand.Config{}, p.X); err == nil { // never a nil config: expand would share (and write) a global one across goroutines
					lit(strconv.Itoa(n))
					continue
				}
			}
			markLead()
			f.dynamic = true
			writeRaw(sb, a, p)
			runTime()
		case *syntax.ExtGlob:
			markLead()
			f.glob = true
			sb.WriteString(p.Op.String())
			sb.WriteString(p.Pattern.Value)
			sb.WriteString(")")
			runTime() // @(a|b), !(x): wider than one name part; be safe
		default:
			markLead()
			f.dynamic = true
			writeRaw(sb, a, p)
			runTime()
			a.addNode(Dangerous, "word.unknown", p, "this word part is not understood")
		}
	}
}

// globPattern turns the unquoted source text of a glob (backslash escapes
// kept) into a pathspec pattern: `*`, `?` and `[...]` stay wildcards
// (bash's `[^x]` is pathspec's `[^x]` too); braces were expanded before,
// so a `{` or `}` left is literal.
func globPattern(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteString(pathspec.EscapeMeta(v[i : i+1]))
			}
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// globIndex returns the index of the first unescaped glob metacharacter
// in an unquoted literal, or -1. A '[' counts only when a ']' follows.
func globIndex(s string) int {
	lastClose := strings.LastIndexByte(s, ']')
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return i
		case '[':
			if i < lastClose {
				return i
			}
		}
	}
	return -1
}

// unescapeBare removes the backslashes of an unquoted literal.
func unescapeBare(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
			b.WriteByte(s[i])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescapeDouble removes the backslashes bash removes inside "...".
func unescapeDouble(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.WriteByte(s[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ansiC decodes the body of a $'...' string the way bash does. Bash
// stops the string at a NUL.
func ansiC(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString("\\c")
			}
		case 'x', 'u', 'U':
			maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < maxDigits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(n))
			} else if n <= utf8.MaxRune {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	out := b.String()
	if k := strings.IndexByte(out, 0); k >= 0 {
		out = out[:k]
	}
	return out
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// maxRawPart bounds the source text shown for one run-time part of a
// word, which also keeps deeply nested expansions linear.
const maxRawPart = 256

func writeRaw(sb *strings.Builder, a *analyzer, n syntax.Node) {
	t, _ := a.at(n)
	if len(t) > maxRawPart {
		k := maxRawPart
		for k > 0 && !utf8.RuneStart(t[k]) {
			k--
		}
		t = t[:k] + "..."
	}
	sb.WriteString(t)
}
