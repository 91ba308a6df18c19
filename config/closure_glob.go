package config

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// runGlobs lists the unquoted glob words of a shell script whose matches
// the script runs or sources: the items of a for loop whose body runs or
// sources its variable (`for f in env.d/*.sh; do . "$f"; done`), and a
// glob in a position that runs a file (`source lib/*.sh`). Globs a tool
// merely works on (`eslint src/*.js`) are not listed. A script that does
// not parse lists nothing (callers fail closed on the parse error).
func runGlobs(src []byte) []string {
	f, err := parseShell(src)
	if err != nil {
		return nil
	}
	return scriptGlobs(f)
}

// scriptGlobs is runGlobs of a parsed script.
func scriptGlobs(f *syntax.File) []string {
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ForClause:
			it, ok := n.Loop.(*syntax.WordIter)
			if !ok || !bodyRunsVariable(n.Do) {
				return true
			}
			for _, w := range it.Items {
				if g, ok := globWord(w); ok {
					out = append(out, g)
				}
			}
		case *syntax.CallExpr:
			c := ShellCall{}
			for _, w := range n.Args {
				s, ok := wordLiteral(w)
				c.Args, c.Literal = append(c.Args, s), append(c.Literal, ok)
			}
			for i, w := range n.Args {
				if g, ok := globWord(w); ok && c.runsFile(i) {
					out = append(out, g)
				}
			}
		}
		return true
	})
	return out
}

// bodyRunsVariable reports whether a loop body runs or sources a word
// that is not literal (the loop's variable, as far as can be told).
func bodyRunsVariable(stmts []*syntax.Stmt) bool {
	found := false
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			first, lit := wordLiteral(call.Args[0])
			if !lit {
				found = true
			} else if len(call.Args) > 1 && slices.Contains(fileRunners, path.Base(first)) {
				if _, ok := wordLiteral(call.Args[1]); !ok {
					found = true
				}
			} else if strings.HasPrefix(first, "source_env") || strings.HasPrefix(first, "dotenv") {
				for _, a := range call.Args[1:] {
					if _, ok := wordLiteral(a); !ok {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
}

// globWord is the text of a word with an unquoted glob character and no
// expansion.
func globWord(w *syntax.Word) (string, bool) {
	s, ok := wordLiteral(w)
	if !ok {
		return "", false
	}
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "*?[") {
			return s, true
		}
	}
	return "", false
}

// globs protects what the run globs of a trigger in dir match: the
// directory before the first glob component (anything planted there
// matches next time) and every existing match.
func (b *closureBuilder) globs(dir string, globs []string, why string) {
	for _, g := range globs {
		rel, ok := b.local(dir, g)
		if !ok {
			continue
		}
		comps := strings.Split(rel, "/")
		i := slices.IndexFunc(comps, func(c string) bool { return strings.ContainsAny(c, "*?[") })
		if i > 0 {
			b.add(strings.Join(comps[:i], "/"), why)
		}
		if matches, err := fs.Glob(obsFS{b.root}, rel); err == nil {
			for _, m := range matches {
				b.add(m, why)
			}
		}
	}
}
