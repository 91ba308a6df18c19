package classifier

import (
	"slices"
	"testing"
)

// TestEveryReadOnlyProgramHasAGrammar: a read-only entry without a complete
// grammar would let options the table does not know through.
func TestEveryReadOnlyProgramHasAGrammar(t *testing.T) {
	for name, s := range rules {
		if s.kind == kReadOnly && s.g == nil {
			t.Errorf("%s is read-only without an option grammar", name)
		}
	}
}

// TestUnknownOptionIsDangerous runs an option no program has through every
// read-only program: each must call it dangerous.
func TestUnknownOptionIsDangerous(t *testing.T) {
	for name, s := range rules {
		if s.kind != kReadOnly || s.g.anyArgs {
			continue
		}
		for _, opt := range []string{"--zz-unknown", "-%", "--zz-unknown=1"} {
			cmd := name + " " + opt + " f"
			if got := Classify(cmd).Class; got != Dangerous {
				t.Errorf("Classify(%q) = %s, want dangerous", cmd, got)
			}
		}
	}
}

func TestGrammar(t *testing.T) {
	g := gnu("ab:!o:", "alpha beta= !output= outline")
	tests := []struct {
		long   string
		known  bool
		denied bool
		kind   optKind
	}{
		{"alpha", true, false, optFlag},
		{"al", true, false, optFlag},   // unique prefix
		{"beta", true, false, optArg},  // takes a value
		{"output", true, true, optArg}, // denied
		{"outp", true, true, optArg},   // abbreviation of a denied option
		{"out", true, true, optArg},    // ambiguous, but may mean --output
		{"gamma", false, false, optNone},
		{"help", true, false, optFlag}, // added for GNU tools
	}
	for _, tt := range tests {
		k, ok := g.lookupLong(tt.long)
		if ok != tt.known || k.denied() != tt.denied || ok && k.base() != tt.kind {
			t.Errorf("lookupLong(%q) = %v %v, want known %v denied %v kind %v", tt.long, k, ok, tt.known, tt.denied, tt.kind)
		}
	}
	if !g.risky || g.short['o'] != optArg|optDeny || g.short['b'] != optArg || g.short['a'] != optFlag {
		t.Errorf("short options parsed wrongly: risky %v, o %v, b %v, a %v", g.risky, g.short['o'], g.short['b'], g.short['a'])
	}
	if exact := parseGrammar("", "alpha"); func() bool { _, ok := exact.lookupLong("al"); return ok }() {
		t.Error("a grammar without abbreviations accepted --al")
	}
}

// TestLongTail covers the forms the long-tail corpus cannot show on its
// own: reasons name the right rule.
func TestLongTailRules(t *testing.T) {
	tests := []struct {
		cmd  string
		rule string
	}{
		{"jobs -x rm -f notes.txt", "builtin.jobs_x"},
		{"sort --compress-program=x f", "option.sort"},
		{"sort --comp=x f", "option.sort"},
		{"ls --frobnicate", "option.unknown"},
		{"sort *", "argument.unknown"},
		{"uniq a*", "operand.uniq"},
		{"nm @opts", "option.response_file"},
		{"git -C sub status", "git.elsewhere"},
		{"cd sub && git status", "git.elsewhere"},
		{"find . -frob", "find.unknown"},
		{"wait -p x", "option.unknown"},
	}
	for _, tt := range tests {
		v := Classify(tt.cmd)
		if v.Class != Dangerous || !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == tt.rule }) {
			t.Errorf("Classify(%q) = %s %+v, want dangerous with rule %s", tt.cmd, v.Class, v.Reasons, tt.rule)
		}
	}
}
