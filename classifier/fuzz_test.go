package classifier

import (
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzClassify checks the invariants that must hold for any input: no
// panic, deterministic, reasons that point into the command, and never
// read_only when the command writes a file through a redirection, runs a
// substitution of an unknown program, or holds a control character.
// Seeds: testdata/fuzz/FuzzClassify plus the table tests.
func FuzzClassify(f *testing.F) {
	for _, tt := range classifyTests {
		f.Add(tt.cmd)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		// A slow input crashes the worker, so the fuzzer keeps it.
		timer := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Classify(%q) took more than 10s", cmd)) })
		defer timer.Stop()
		v := Classify(cmd)
		switch v.Class {
		case ReadOnly, Dangerous, Forbidden:
		default:
			t.Fatalf("Classify(%q): unknown class %q", cmd, v.Class)
		}
		if v2 := Classify(cmd); v2.Class != v.Class || len(v2.Reasons) != len(v.Reasons) {
			t.Fatalf("Classify(%q) not deterministic: %s then %s", cmd, v.Class, v2.Class)
		}
		for _, r := range v.Reasons {
			if r.Rule == ruleInternal {
				t.Fatalf("Classify(%q) panicked: %s", cmd, r.Message)
			}
			if r.Offset < 0 || r.Offset > len(cmd) || r.Rule == "" || r.Message == "" {
				t.Fatalf("Classify(%q): bad reason %+v", cmd, r)
			}
		}
		// Parts: a resolved command's parts are its simple commands, none
		// above the verdict's class, and a dangerous verdict has a
		// dangerous part to show for it (no finding left unattributed).
		if len(v.Parts) > 0 {
			worst := ReadOnly
			for _, p := range v.Parts {
				if p.Class.rank() > worst.rank() {
					worst = p.Class
				}
				if len(p.Argv) == 0 {
					t.Fatalf("Classify(%q): empty part", cmd)
				}
			}
			if worst != v.Class {
				t.Fatalf("Classify(%q) = %s, but its worst part is %s", cmd, v.Class, worst)
			}
			if len(v.Parts) != len(v.Commands) {
				t.Fatalf("Classify(%q): %d parts for %d commands", cmd, len(v.Parts), len(v.Commands))
			}
		}
		if v.Class != ReadOnly {
			if len(v.Reasons) == 0 {
				t.Fatalf("Classify(%q) = %s without a reason", cmd, v.Class)
			}
			return
		}
		if len(v.Reasons) != 0 {
			t.Fatalf("Classify(%q) is read_only with reasons %+v", cmd, v.Reasons)
		}
		if i := strings.IndexFunc(cmd, func(r rune) bool {
			return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\uFFFD'
		}); i >= 0 {
			t.Fatalf("Classify(%q) = read_only despite control character at %d", cmd, i)
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("Classify(%q) = read_only despite parse error %v", cmd, err)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Redirect:
				if writesFile(n) {
					t.Fatalf("Classify(%q) = read_only despite the write redirection at %s", cmd, n.Pos())
				}
			case *syntax.CmdSubst:
				checkSubst(t, cmd, n.Stmts)
			case *syntax.ProcSubst:
				checkSubst(t, cmd, n.Stmts)
			}
			return true
		})
	})
}

// writesFile is the fuzz oracle's own, deliberately simple, notion of a
// redirection that writes a file.
func writesFile(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return false
	}
	dynamic := false
	syntax.Walk(r.Word, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst:
			dynamic = true
		}
		return !dynamic
	})
	if dynamic {
		return true
	}
	w, err := expand.Literal(nil, r.Word)
	if err != nil {
		return true
	}
	// Be lenient about backslashes: the oracle must never flag a
	// harmless target, it may miss some writes.
	w = strings.ReplaceAll(w, "\\", "")
	if r.Op == syntax.DplOut && (w == "-" || w != "" && strings.Trim(w, "0123456789") == "") {
		return false
	}
	switch w {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2":
		return false
	}
	return true
}

// checkSubst fails when a substitution runs a program that is not in the
// rule tables as read-only.
func checkSubst(t *testing.T, cmd string, stmts []*syntax.Stmt) {
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			c, ok := n.(*syntax.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			name := strings.ReplaceAll(c.Args[0].Lit(), "\\", "")
			if name == "" || strings.ContainsAny(name, "{*?[") {
				return true // not a plain literal; the classifier normalizes it
			}
			if strings.HasPrefix(name, "/") {
				name = path.Base(name) // lenient: /bin/ls is ls
			}
			sp, known := rules[name]
			if !known || sp.kind == kDangerous || sp.kind == kForbidden {
				t.Fatalf("Classify(%q) = read_only despite a substitution running %q", cmd, name)
			}
			return true
		})
	}
}
