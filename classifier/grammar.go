package classifier

import (
	"strings"
)

// A grammar is the complete option grammar of a read-only program. Every
// option the program accepts is listed; an option the grammar does not
// know makes the call dangerous, because it may be one that writes a file
// or runs a program (sort --compress-program, rg --pre, nm --plugin).
//
// Grammars are written as two strings in the style of getopt:
//
//	short: "c:n:qvz"   c and n take a value (attached or the next word),
//	                   q, v, z do not; "w::" takes an optional attached value
//	long:  "bytes= lines= quiet color?"
//	                   "=" takes a value (=value or the next word),
//	                   "?" an optional =value, "==" two values (jq --arg)
//
// A "!" before a letter or a name marks an option that writes a file or
// runs a program: it makes the call dangerous with the grammar's why.
type grammar struct {
	short [128]optKind
	long  map[string]optKind

	why      string // completes "--output makes sort ...": "write a file"
	abbrev   bool   // GNU getopt_long: unambiguous prefixes of long options
	permute  bool   // options may follow operands (GNU); else the first operand ends them
	digits   bool   // -NUM is an option (head -5, grep -3, diff -5)
	anyArgs  bool   // no options at all: every word is an operand (echo, expr)
	respFile bool   // an @FILE operand reads more options from FILE (binutils)
	nextVals bool   // bundled letters take their values from the next words (tree)
	maxOps   int    // most operands allowed (-1: any); more means an output file
	// risky is set when the grammar has an option that is not read-only
	// or an operand that writes: then a word whose value is only known at
	// run time (a glob, a substitution) could become that option.
	risky bool
}

type optKind uint8

const (
	optNone   optKind = iota
	optFlag           // no value
	optArg            // a required value
	optOptArg         // an optional value, attached only
	optArg2           // two values, the next two words (jq --arg NAME VALUE)
	optDeny   optKind = 0x80
)

func (k optKind) base() optKind { return k &^ optDeny }
func (k optKind) denied() bool  { return k&optDeny != 0 }

// parseGrammar builds a grammar from its short and long strings.
func parseGrammar(short, long string) *grammar {
	g := &grammar{long: map[string]optKind{}, maxOps: -1}
	for i := 0; i < len(short); i++ {
		var deny optKind
		if short[i] == '!' {
			deny = optDeny
			i++
		}
		ch := short[i]
		k := optFlag
		if i+2 < len(short) && short[i+1] == ':' && short[i+2] == ':' {
			k = optOptArg
			i += 2
		} else if i+1 < len(short) && short[i+1] == ':' {
			k = optArg
			i++
		}
		g.short[ch] = k | deny
	}
	for _, n := range strings.Fields(long) {
		var deny optKind
		if n[0] == '!' {
			deny = optDeny
			n = n[1:]
		}
		k := optFlag
		switch {
		case strings.HasSuffix(n, "=="):
			k, n = optArg2, n[:len(n)-2]
		case strings.HasSuffix(n, "="):
			k, n = optArg, n[:len(n)-1]
		case strings.HasSuffix(n, "?"):
			k, n = optOptArg, n[:len(n)-1]
		}
		g.long[n] = k | deny
	}
	for _, k := range g.short {
		if k.denied() {
			g.risky = true
		}
	}
	for _, k := range g.long {
		if k.denied() {
			g.risky = true
		}
	}
	return g
}

// gnu is a GNU-style grammar: getopt_long with permutation and
// abbreviations, plus --help and --version.
func gnu(short, long string) *grammar {
	g := parseGrammar(short, long+" help version")
	g.abbrev, g.permute = true, true
	return g
}

// builtinG is a bash builtin's grammar: options stop at the first operand,
// there are no long options.
func builtinG(short string) *grammar { return parseGrammar(short, "") }

// lookupLong resolves --name, with GNU abbreviations when the grammar
// allows them. An abbreviation that could mean a denied option is that
// option.
func (g *grammar) lookupLong(name string) (optKind, bool) {
	if k, ok := g.long[name]; ok {
		return k, true
	}
	if !g.abbrev || name == "" {
		return optNone, false
	}
	var found optKind
	n := 0
	for full, k := range g.long {
		if !strings.HasPrefix(full, name) {
			continue
		}
		if k.denied() {
			return k, true
		}
		if n > 0 && k.base() != found.base() {
			// Ambiguous between options of different shapes: the
			// program refuses it, but where the value is is unclear.
			return optNone, false
		}
		found = k
		n++
	}
	return found, n > 0
}

// splits reports whether a run-time word may become several words (an
// unquoted substitution or a glob), so that a word after the first could
// be an option whatever the first one starts with.
func (f *field) splits() bool {
	return f.dynamic && !f.dquoted && !f.procSub
}

// checkOptions applies a read-only program's grammar to c.
func (a *analyzer) checkOptions(c *call, g *grammar) {
	var st optScan
	for i := 1; i < len(c.args); i++ {
		skip, ok := a.checkWord(c, i, g, &st)
		if !ok {
			return
		}
		i += skip
	}
	name := c.name()
	many := st.many
	if c.extra {
		many = true
		if g.risky {
			a.flag(c, -1, Dangerous, "argument.unknown", "arguments appended at run time could be options of "+name)
			return
		}
	}
	if g.maxOps >= 0 && (st.operands > g.maxOps || many) {
		a.flag(c, -1, Dangerous, "operand."+name, name+" with more than "+itoa(g.maxOps)+" operand(s) writes an output file")
	}
}

// optScan is the state of checkOptions over a call's words.
type optScan struct {
	operands int
	many     bool // an operand may expand to several words
	endOpts  bool
}

// operand counts an operand; a grammar that does not permute reads no
// option after it.
func (st *optScan) operand(g *grammar) {
	st.operands++
	if !g.permute {
		st.endOpts = true
	}
}

// checkWord checks c.args[i] against g and returns how many words after
// it are its values; false when it flagged the call.
func (a *analyzer) checkWord(c *call, i int, g *grammar, st *optScan) (int, bool) {
	f := &c.args[i]
	if f.unknown() {
		return 0, a.unknownWord(c, i, g, st)
	}
	v := f.val
	switch {
	case st.endOpts || g.anyArgs || v == "-" || !strings.HasPrefix(v, "-"):
		if g.respFile && !st.endOpts && strings.HasPrefix(v, "@") {
			a.flag(c, i, Dangerous, "option.response_file", c.name()+" reads more options from "+v+", which could load a plugin")
			return 0, false
		}
		st.operand(g)
		return 0, true
	case v == "--":
		st.endOpts = true
		return 0, true
	case strings.HasPrefix(v, "--"):
		return a.longOption(c, i, g)
	case g.digits && isDigits(v[1:]):
		return 0, true
	}
	return a.shortOptions(c, i, g)
}

// unknownWord checks a word only known at run time: where an option may
// stand it must be safe as one, else it is an operand (several, for a
// glob or a splitting substitution). False when it flagged the call.
func (a *analyzer) unknownWord(c *call, i int, g *grammar, st *optScan) bool {
	f := &c.args[i]
	if !st.endOpts && g.risky && (f.mayBeOption() || f.splits() || g.respFile && (f.lead == "" || f.lead[0] == '@')) {
		if !a.optionFromLead(c, i, g) {
			a.flag(c, i, Dangerous, "argument.unknown", "this argument is only known at run time and could become an option of "+c.name()+" that is not read-only (a file named like an option matches a glob)")
			return false
		}
		return true
	}
	if f.glob || f.splits() {
		st.many = true
	}
	st.operand(g)
	return true
}

// shortOpt is the kind of the short option letter ch (optNone when the
// grammar does not know it).
func (g *grammar) shortOpt(ch byte) optKind {
	if ch >= 128 {
		return optNone
	}
	return g.short[ch]
}

// longOption checks the long option c.args[i] ("--name" or
// "--name=value") and returns how many words after it are its values;
// false when it flagged the call.
func (a *analyzer) longOption(c *call, i int, g *grammar) (int, bool) {
	name := c.name()
	n, _, hasVal := strings.Cut(c.args[i].val[2:], "=")
	k, ok := g.lookupLong(n)
	if !ok {
		a.flag(c, i, Dangerous, "option.unknown", "--"+n+" is not a known read-only option of "+name)
		return 0, false
	}
	if k.denied() {
		a.flag(c, i, Dangerous, "option."+name, "--"+n+" makes "+name+" "+g.why)
		return 0, false
	}
	skip := 0
	switch k.base() {
	case optArg:
		if !hasVal {
			skip = 1
		}
	case optArg2:
		skip = 2
	}
	return skip, a.values(c, i, skip, g)
}

// shortOptions checks the bundled letters of c.args[i] ("-abc") and
// returns how many words after it are their values; false when it flagged
// the call. A letter taking a value ends the bundle (the rest is the
// value) unless the grammar reads the values of all its letters from the
// next words (nextVals).
func (a *analyzer) shortOptions(c *call, i int, g *grammar) (int, bool) {
	name := c.name()
	v := c.args[i].val
	pending := 0 // values of bundled letters, for nextVals grammars
	for j := 1; j < len(v); j++ {
		ch := v[j]
		if g.digits && ch >= '0' && ch <= '9' {
			continue
		}
		k := g.shortOpt(ch)
		if k == optNone {
			a.flag(c, i, Dangerous, "option.unknown", "-"+string(ch)+" is not a known read-only option of "+name)
			return 0, false
		}
		if k.denied() {
			a.flag(c, i, Dangerous, "option."+name, "-"+string(ch)+" makes "+name+" "+g.why)
			return 0, false
		}
		if g.nextVals && k.base() != optFlag {
			pending++
			if k.base() == optArg2 {
				pending++
			}
			continue
		}
		if k.base() == optArg || k.base() == optArg2 {
			skip := 0
			if j == len(v)-1 {
				skip = 1
				if k.base() == optArg2 {
					skip = 2
				}
			}
			return skip, a.values(c, i, skip, g)
		}
		if k.base() == optOptArg {
			break
		}
	}
	// Without nextVals pending is 0; with it no letter above returned.
	return pending, a.values(c, i, pending, g)
}

// values checks the n words after c.args[i] that an option takes as its
// values. A glob or an unquoted substitution there may expand to several
// words; the ones after the first land where options are read.
func (a *analyzer) values(c *call, i, n int, g *grammar) bool {
	if !g.risky {
		return true
	}
	for j := i + 1; j <= i+n && j < len(c.args); j++ {
		f := &c.args[j]
		if f.glob && f.mayBeOption() || f.splits() {
			a.flag(c, j, Dangerous, "argument.unknown", "this value may expand to several words, and the later ones could be options of "+c.name()+" that are not read-only")
			return false
		}
	}
	return true
}

// optionFromLead accepts a run-time word whose literal start already
// names a known read-only option with its value attached
// (--include=*.go): only the value is unknown.
func (a *analyzer) optionFromLead(c *call, i int, g *grammar) bool {
	f := &c.args[i]
	if f.splits() {
		return false
	}
	rest, ok := strings.CutPrefix(f.lead, "--")
	if !ok {
		return false
	}
	n, _, has := strings.Cut(rest, "=")
	if !has {
		return false
	}
	k, known := g.lookupLong(n)
	return known && !k.denied() && k.base() == optArg
}
