package pathspec

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Overlap reports whether some path matches both pattern a (doublestar
// syntax: `*` and `?` within a name, `[...]` classes, `{x,y}`
// alternatives, `**` across names, `\` escapes) and pattern b. When bashB
// is true, b is a bash glob: a wildcard at the start of a name does not
// match a leading dot, as in bash without dotglob (a `**` in b, which is
// how a run-time part of a shell word is written, matches anything).
//
// It decides emptiness of the intersection of the two patterns' automata,
// so `.e*` overlaps `.env`, `.[e]nv` and `.en?` overlap `.env`, and
// `*.go` does not overlap `**/.env`. Patterns too large to decide
// (more than 64 brace alternatives, more than a million state pairs)
// overlap.
func Overlap(a, b string, bashB bool) bool {
	return Compiled(a, false).Overlaps(Compiled(b, bashB))
}

// A Glob is a compiled pattern, for many Overlap questions. Safe for
// concurrent use.
type Glob struct {
	src  string
	bash bool
	// lit is the path a pattern without wildcards names (isLit).
	lit   string
	isLit bool
	once  sync.Once
	alts  []*nfa // nil: too large to decide, overlaps everything

	namesOnce sync.Once
	names     []*Glob // each name (between slashes); nil when a ** spans names

	litOnce sync.Once
	lits    []string // the names of lit
}

// litNames returns the names of a literal pattern's path.
func (g *Glob) litNames() []string {
	g.litOnce.Do(func() {
		for _, n := range strings.Split(g.lit, "/") {
			if n != "" {
				g.lits = append(g.lits, n)
			}
		}
	})
	return g.lits
}

// nameGlobs returns the pattern's names compiled one by one, or nil when
// a `**` or a brace makes names unclear.
func (g *Glob) nameGlobs() []*Glob {
	g.namesOnce.Do(func() {
		if strings.Contains(g.src, "**") || strings.ContainsAny(g.src, "{}") {
			return
		}
		for _, n := range strings.Split(g.src, "/") {
			if n != "" {
				g.names = append(g.names, Compiled(n, g.bash))
			}
		}
	})
	return g.names
}

// Compiled compiles pattern p (a bash glob when bash is true) for Overlaps.
func Compiled(p string, bash bool) *Glob {
	g := &Glob{src: p, bash: bash}
	if !strings.ContainsAny(p, "*?[{") {
		g.lit, g.isLit = unescape(p), true
	}
	return g
}

func (g *Glob) nfas() []*nfa {
	g.once.Do(func() {
		ps := expandBraces(g.src, 64)
		if ps == nil {
			return
		}
		g.alts = make([]*nfa, 0, len(ps))
		for _, x := range ps {
			g.alts = append(g.alts, build(x, g.bash))
		}
	})
	return g.alts
}

func unescape(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// Overlaps reports whether some path matches both g and h (see Overlap).
func (g *Glob) Overlaps(h *Glob) bool {
	ga, ha := g.nfas(), h.nfas()
	if ga == nil || ha == nil {
		return true
	}
	for _, na := range ga {
		for _, nb := range ha {
			if len(na.edges)*len(nb.edges) > 1<<20 || intersect(na, nb) {
				return true
			}
		}
	}
	return false
}

const (
	csLit   = iota // one rune
	csAny          // any rune but '/'
	csAll          // any rune, '/' too
	csClass        // a bracket class
)

type charset struct {
	kind  uint8
	neg   bool
	noDot bool // csAny/csClass: not '.' either (a bash wildcard at a name's start)
	slash bool // csClass: may match '/' (doublestar's classes do; bash's never)
	r     rune
	rng   []rune // lo, hi pairs of a class
}

func (c *charset) has(r rune) bool {
	switch c.kind {
	case csLit:
		return r == c.r
	case csAll:
		return true
	}
	if r == '/' && !c.slash || c.noDot && r == '.' {
		return false
	}
	if c.kind == csAny {
		return true
	}
	in := false
	for i := 0; i+1 < len(c.rng); i += 2 {
		if r >= c.rng[i] && r <= c.rng[i+1] {
			in = true
			break
		}
	}
	return in != c.neg
}

// intersects reports whether some rune is in both sets. Both are unions
// of intervals, so a common rune exists iff one of the intervals' left
// ends is common; those are the candidates tried.
func intersects(x, y *charset) bool {
	if x.kind == csLit {
		return y.has(x.r)
	}
	if y.kind == csLit {
		return x.has(y.r)
	}
	cands := []rune{0, '/', '/' + 1, '.' + 1}
	for _, c := range []*charset{x, y} {
		for i := 0; i+1 < len(c.rng); i += 2 {
			cands = append(cands, c.rng[i], c.rng[i+1]+1)
		}
	}
	for _, r := range cands {
		if r <= utf8.MaxRune && x.has(r) && y.has(r) {
			return true
		}
	}
	return false
}

type edge struct {
	cs charset
	to int
}

type nfa struct {
	eps    [][]int
	edges  [][]edge
	accept int
}

func (n *nfa) state() int {
	n.eps = append(n.eps, nil)
	n.edges = append(n.edges, nil)
	return len(n.eps) - 1
}

func (n *nfa) edge(from int, cs charset, to int) { n.edges[from] = append(n.edges[from], edge{cs, to}) }

// build compiles one pattern (braces already expanded).
func build(p string, bash bool) *nfa {
	n := &nfa{}
	cur := n.state()
	rs := []rune(p)
	nameStart := true
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		noDot := bash && nameStart
		nameStart = false
		switch {
		case c == '/' && len(rs)-i-1 >= 2 && strings.Trim(string(rs[i+1:]), "*") == "":
			// A trailing `/**` also matches the directory itself, as in
			// doublestar: nothing, or '/' and anything.
			next, loop := n.state(), n.state()
			n.eps[cur] = append(n.eps[cur], next)
			n.edge(cur, charset{kind: csLit, r: '/'}, loop)
			n.edge(loop, charset{kind: csAll}, loop)
			n.eps[loop] = append(n.eps[loop], next)
			cur = next
			i = len(rs)
		case c == '\\' && i+1 < len(rs):
			i++
			next := n.state()
			n.edge(cur, charset{kind: csLit, r: rs[i]}, next)
			cur = next
		case c == '*' && i+1 < len(rs) && rs[i+1] == '*':
			for i+1 < len(rs) && rs[i+1] == '*' {
				i++
			}
			next := n.state()
			if i+1 < len(rs) && rs[i+1] == '/' {
				// `**/`: nothing, or anything that ends with a '/'.
				i++
				loop := n.state()
				n.eps[cur] = append(n.eps[cur], next)
				n.edge(cur, charset{kind: csLit, r: '/'}, next)
				n.edge(cur, charset{kind: csAll}, loop)
				n.edge(loop, charset{kind: csAll}, loop)
				n.edge(loop, charset{kind: csLit, r: '/'}, next)
				nameStart = true
			} else {
				n.eps[cur] = append(n.eps[cur], next)
				n.edge(cur, charset{kind: csAll}, next)
				n.edge(next, charset{kind: csAll}, next)
			}
			cur = next
		case c == '*':
			// Nothing, or a first rune (not a dot at a bash name's start)
			// and then any runes but '/'.
			next, loop := n.state(), n.state()
			n.eps[cur] = append(n.eps[cur], next)
			n.edge(cur, charset{kind: csAny, noDot: noDot}, loop)
			n.edge(loop, charset{kind: csAny}, loop)
			n.eps[loop] = append(n.eps[loop], next)
			cur = next
		case c == '?':
			next := n.state()
			n.edge(cur, charset{kind: csAny, noDot: noDot}, next)
			cur = next
		case c == '[':
			cs, end, ok := parseClass(rs, i)
			next := n.state()
			if !ok {
				n.edge(cur, charset{kind: csLit, r: '['}, next)
			} else {
				cs.noDot, cs.slash = noDot, !bash
				n.edge(cur, cs, next)
				i = end
			}
			cur = next
		default:
			next := n.state()
			n.edge(cur, charset{kind: csLit, r: c}, next)
			cur = next
			nameStart = c == '/'
		}
	}
	n.accept = cur
	return n
}

// parseClass parses the bracket class starting at rs[i] == '['; end is the
// index of its ']'.
func parseClass(rs []rune, i int) (charset, int, bool) {
	cs := charset{kind: csClass}
	j := i + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		cs.neg = true
		j++
	}
	first := true
	for ; j < len(rs); j++ {
		c := rs[j]
		if c == ']' && !first {
			return cs, j, true
		}
		first = false
		if c == '\\' && j+1 < len(rs) {
			j++
			c = rs[j]
		}
		lo, hi := c, c
		if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
			hi = rs[j+2]
			if hi == '\\' && j+3 < len(rs) {
				hi = rs[j+3]
				j++
			}
			j += 2
		}
		if lo > hi {
			// A reversed range: matchers disagree; cover both ends,
			// everything between and the dash.
			lo, hi = hi, lo
			cs.rng = append(cs.rng, '-', '-')
		}
		cs.rng = append(cs.rng, lo, hi)
	}
	return charset{}, i, false
}

// intersect searches the product automaton for a pair of accepting states.
func intersect(a, b *nfa) bool {
	nb := len(b.edges)
	seen := make([]bool, len(a.edges)*nb)
	stack := make([]int, 1, 16)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		p, q := x/nb, x%nb
		if p == a.accept && q == b.accept {
			return true
		}
		for _, e := range a.eps[p] {
			stack = append(stack, e*nb+q)
		}
		for _, e := range b.eps[q] {
			stack = append(stack, p*nb+e)
		}
		for i := range a.edges[p] {
			ea := &a.edges[p][i]
			for j := range b.edges[q] {
				eb := &b.edges[q][j]
				if intersects(&ea.cs, &eb.cs) {
					stack = append(stack, ea.to*nb+eb.to)
				}
			}
		}
	}
	return false
}

// expandBraces expands `{x,y}` alternatives (nested ones too); nil when
// there would be more than limit patterns.
func expandBraces(p string, limit int) []string {
	open, close, commas := braceAt(p)
	if open < 0 {
		return []string{p}
	}
	var out []string
	prev := open + 1
	for _, c := range append(commas, close) {
		for _, tail := range expandBraces(p[:open]+p[prev:c]+p[close+1:], limit) {
			out = append(out, tail)
			if len(out) > limit {
				return nil
			}
		}
		prev = c + 1
	}
	return out
}

// braceAt finds the first unescaped `{` with a matching `}`, and the
// commas at its own level.
func braceAt(p string) (open, close int, commas []int) {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth := 0
			var cs []int
			for j := i; j < len(p); j++ {
				switch p[j] {
				case '\\':
					j++
				case '{':
					depth++
				case '}':
					depth--
					if depth == 0 {
						return i, j, cs // {x} is one alternative, as in doublestar
					}
				case ',':
					if depth == 1 {
						cs = append(cs, j)
					}
				}
			}
		}
	}
	return -1, -1, nil
}
