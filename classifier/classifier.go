// Package classifier decides whether a bash command string is read_only,
// dangerous or forbidden before it runs.
//
// It parses the command with mvdan.cc/sh/v3 in the bash dialect, builds the
// argv bash would really run for every simple command it finds (quote
// removal, backslashes, ANSI-C strings, brace expansion), including those in
// substitutions, here-documents, arithmetic and re-parsed `bash -c` bodies,
// and judges each one against rule tables kept as data (rules.go), which
// configuration can extend.
//
// The promises:
//   - read_only is a proof: only programs, subcommands and flags known to be
//     free of side effects are read_only; anything unknown, unparsable or
//     computed at run time is dangerous.
//   - forbidden is decided on the same normalized argv, so quoting tricks
//     (r”m, \rm, $'\x72m', {rm,-rf,/}) and paths (/bin/rm) do not hide it.
//   - caps on size, nesting depth and number of commands never lower the
//     class: hitting one makes the verdict at least dangerous and keeps
//     every finding made before it.
//   - Parts (what permission rules and grants cover part by part) are
//     reported only for a command made wholly of simple commands whose
//     every word is known before it runs, and every finding is some part's:
//     the worst part's class is the verdict's class.
//
// Classify is safe for concurrent use.
package classifier

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Class is the verdict's class; exactly these strings appear in JSON.
type Class string

// The three classes, least to most severe.
const (
	ReadOnly  Class = "read_only"
	Dangerous Class = "dangerous"
	Forbidden Class = "forbidden"
)

func (c Class) rank() int {
	switch c {
	case ReadOnly:
		return 0
	case Dangerous:
		return 1
	}
	return 2
}

// Reason explains one finding: which rule fired, the offending source text,
// its byte offset in the command and a sentence for a human.
type Reason struct {
	Rule    string `json:"rule"`
	Text    string `json:"text"`
	Offset  int    `json:"offset"`
	Message string `json:"message"`
}

// Verdict is the result of Classify.
type Verdict struct {
	// Class is the most severe class of anything found.
	Class Class `json:"class"`
	// Reasons lists the findings that made the class more severe than
	// read_only, sorted by offset (at most 64, plus a cap.reasons entry).
	// Empty for read_only.
	Reasons []Reason `json:"reasons"`
	// Commands holds the normalized argv of every simple command found,
	// nested ones included. A part whose value is only known at run time
	// ($VAR, $(cmd)) is shown as its source text.
	Commands [][]string `json:"commands"`
	// Prefix is the argv prefix an "always allow" grant would be keyed by
	// (["git","log"], ["npm","run","test"]). It is set only for a single
	// simple command that is not forbidden and is resolved (Parts).
	Prefix []string `json:"prefix,omitempty"`
	// Parts are the simple commands of a command made only of simple
	// commands joined by lists (;, &&, ||, newlines, &), pipelines,
	// subshells and { } groups, each with every word known before it
	// runs, in order, each judged alone (its assignments and redirections
	// included). Empty when the command is anything else (a substitution,
	// a parameter expansion, eval or a shell's -c script, a function, a
	// loop or condition, an assignment that changes what runs, a finding
	// about no single command, a cap): such a command cannot be allowed
	// part by part.
	Parts []Part `json:"parts,omitempty"`
}

// Part is one simple command of a plain command (Verdict.Parts).
type Part struct {
	Argv  []string `json:"argv"`
	Class Class    `json:"class"`
	// Prefix is the argv prefix an "always allow" of this part would be
	// keyed by; empty when none is offered (a forbidden part, a wrapper
	// such as timeout or xargs that runs another command, a program
	// named by a computed word).
	Prefix []string `json:"prefix,omitempty"`
	wraps  bool     // a wrapper: its argv runs another command
}

const ruleInternal = "internal.panic"

var parserPool = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}}

// Classify judges command. It never panics and never fails: anything it
// cannot prove harmless is Dangerous.
func Classify(command string, opts ...Option) (v Verdict) {
	a := &analyzer{top: command, o: defaultOptions, class: ReadOnly}
	defer func() {
		// Fail closed: a bug must never turn into a crash of the caller
		// or a read_only verdict, and findings made before it are kept.
		// The fuzz test treats this reason as a failure.
		if r := recover(); r != nil {
			a.add(Dangerous, ruleInternal, command[:min(40, len(command))], 0,
				fmt.Sprintf("internal error in the classifier (%v); treated as dangerous", r))
			v = Verdict{Class: a.class, Commands: [][]string{}, Reasons: a.reasons}
			if v.Class == ReadOnly {
				v.Class = Dangerous
			}
		}
	}()
	a.opts = &a.o
	for _, fn := range opts {
		if fn != nil {
			fn(a.opts)
		}
	}
	a.run(command)
	slices.SortStableFunc(a.reasons, func(x, y Reason) int { return x.Offset - y.Offset })
	v = Verdict{Class: a.class, Reasons: a.reasons, Commands: a.commands}
	if v.Reasons == nil {
		v.Reasons = []Reason{}
	}
	if v.Commands == nil {
		v.Commands = [][]string{}
	}
	if !a.unplain && len(a.parts) > 0 && len(a.parts) == a.simple {
		v.Parts = a.parts
		for i := range v.Parts {
			if p := &v.Parts[i]; p.Class != Forbidden && !p.wraps {
				p.Prefix = grantPrefix(p.Argv)
			}
		}
		if len(v.Parts) == 1 {
			v.Prefix = v.Parts[0].Prefix
		}
	}
	return v
}

func (a *analyzer) run(command string) {
	a.class = ReadOnly
	if len(command) > a.opts.maxBytes {
		a.add(Dangerous, "cap.size", command[:min(40, len(command))], 0, "the command is longer than the size cap and was not analysed")
		return
	}
	if off, ok := controlChar(command); ok {
		end := min(off+1, len(command))
		a.add(Dangerous, "control_char", command[off:end], off,
			"the command holds a control character (CR, NUL, ...) that the parser and bash read differently")
		// Keep going: forbidden findings still count.
	}
	if strings.TrimSpace(command) == "" {
		return
	}
	if off, ok := tooDeep(command, maxBracketDepth); ok {
		// The parser is slow on very deep nesting; no real command
		// nests this deep.
		a.capHit = true
		a.add(Dangerous, "cap.depth", command[off:min(off+40, len(command))], off,
			"brackets nest deeper than the classifier analyses")
		return
	}
	a.parseAndWalk(command, 0, 0)
	if a.cdSeen {
		for _, r := range a.gitReadAt {
			a.add(Dangerous, "git.elsewhere", r.Text, r.Offset, "git runs after a change of directory, maybe in a nested repository or submodule whose config is not trusted")
		}
	}
}

// controlChar reports the offset of the first byte that bash and the parser
// may disagree on: C0 controls other than tab and newline, DEL, C1 controls
// and invalid UTF-8.
func controlChar(s string) (int, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return i, true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i, true
		}
		if r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 {
			return i, true
		}
		i += n
	}
	return 0, false
}

// maxBracketDepth bounds the nesting of (, { and [ that is parsed at all.
const maxBracketDepth = 512

// tooDeep counts bracket nesting naively (quotes ignored, so it can only
// over-count) and reports where it first exceeds limit.
func tooDeep(s string, limit int) (int, bool) {
	d := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{', '[':
			d++
			if d > limit {
				return i, true
			}
		case ')', '}', ']':
			if d > 0 {
				d--
			}
		}
	}
	return 0, false
}
