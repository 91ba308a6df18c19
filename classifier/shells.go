package classifier

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shells, interpreters, eval, source, alias and trap: they run code given
// as text, which is re-parsed where it is literal.

// stdinScript returns the script a shell reads on stdin when the command
// gives it literally (a quoted here-document or a here-string).
func (a *analyzer) stdinScript(c *call) (string, int, bool) {
	if c.stmt == nil {
		return "", 0, false
	}
	for _, r := range c.stmt.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				return "", 0, true
			}
			quoted := false
			for _, p := range r.Word.Parts {
				if _, ok := p.(*syntax.Lit); !ok {
					quoted = true
				}
			}
			if len(r.Hdoc.Parts) == 1 {
				if l, ok := r.Hdoc.Parts[0].(*syntax.Lit); ok && (quoted || !strings.ContainsAny(l.Value, "\\$`")) {
					t, off := a.at(r)
					_ = t
					return l.Value, off, true
				}
			}
			return "", 0, false
		case syntax.WordHdoc:
			fs := a.words([]*syntax.Word{r.Word})
			if len(fs) == 1 && !fs[0].unknown() {
				return fs[0].val, fs[0].off, true
			}
			return "", 0, false
		case syntax.RdrIn:
			return "", 0, false
		}
	}
	return "", 0, false
}

// hShell: sh/bash -c BODY is re-parsed and classified; a script file or
// code from stdin or the network is not known.
func hShell(a *analyzer, c *call) {
	body := -1
	dashC, dashS := false, false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if f.unknown() && f.mayBeOption() && !dashC {
			if f.fromNet {
				a.flag(c, i, Forbidden, "remote_code.subst", "runs code fetched from the network")
				return
			}
			a.flag(c, i, Dangerous, "shell.dynamic", "the shell's arguments are only known at run time")
			return
		}
		if dashC {
			body = i
			break
		}
		switch {
		case v == "-c":
			dashC = true
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			if v == "--rcfile" || v == "--init-file" {
				a.flag(c, i, Dangerous, "shell.rc", "runs a startup file")
			}
			i++
		case v == "-l" || v == "--login" || v == "-i":
			a.flag(c, i, Dangerous, "shell.rc", "a login or interactive shell runs startup files")
		case v == "--" || v == "-":
			if i+1 < len(c.args) {
				body = -2 - (i + 1)
			}
			i = len(c.args)
		case strings.HasPrefix(v, "--"):
			switch v {
			case "--norc", "--noprofile", "--posix", "--restricted", "--verbose", "--noediting", "--version", "--help":
			default:
				a.flag(c, i, Dangerous, "option.unknown", c.name()+" option "+v+" is not known")
				return
			}
		case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
			if strings.Trim(v[1:], "abefhkmnptuvxBCEHPTilrscoO") != "" {
				a.flag(c, i, Dangerous, "option.unknown", c.name()+" option "+v+" is not known")
				return
			}
			if strings.Contains(v, "c") && !strings.HasPrefix(v, "--") {
				dashC = true
			}
			if strings.HasSuffix(v, "o") || strings.HasSuffix(v, "O") {
				i++ // the option name
			}
			if strings.Contains(v, "s") && !strings.HasPrefix(v, "--") && !dashC {
				dashS = true
				i = len(c.args) // the rest are positional parameters
			}
			if strings.ContainsAny(v, "li") && !strings.HasPrefix(v, "--") {
				a.flag(c, i, Dangerous, "shell.rc", "a login or interactive shell runs startup files")
			}
		default:
			body = -2 - i
			i = len(c.args)
		}
	}
	switch {
	case dashS:
		a.stdinCode(c)
	case body >= 0:
		f := c.args[body]
		if f.unknown() {
			if f.fromNet {
				a.flag(c, body, Forbidden, "remote_code.subst", "runs code fetched from the network")
				return
			}
			a.flag(c, body, Dangerous, "shell.dynamic", "the script to run is only known at run time")
			return
		}
		if !isShell(c.name()) {
			a.flag(c, body, Dangerous, "shell.other", c.name()+" is not bash-compatible; its script cannot be analysed")
			return
		}
		a.parseAndWalk(f.val, f.off, 1)
	case body <= -2:
		i := -2 - body
		f := c.args[i]
		if f.procSub && f.fromNet {
			a.flag(c, i, Forbidden, "remote_code.procsubst", "runs a script fetched from the network")
			return
		}
		if f.val == "/dev/stdin" {
			a.stdinCode(c)
			return
		}
		a.flag(c, i, Dangerous, "shell.script", "runs the script "+f.raw)
	case dashC:
		a.flag(c, -1, Dangerous, "parse_error", "-c without a command")
	default:
		a.stdinCode(c)
	}
}

// stdinCode handles a shell or interpreter that runs code from stdin.
func (a *analyzer) stdinCode(c *call) {
	if a.cur != nil {
		a.cur.runsStdin = true
	}
	if a.stdinNet {
		a.flag(c, -1, Forbidden, "remote_code.redirect", "runs code fetched from the network through a redirection")
		return
	}
	if s, off, ok := a.stdinScript(c); ok && s != "" && isShell(c.name()) {
		a.parseAndWalk(s, off, 1)
		return
	}
	a.flag(c, -1, Dangerous, "interpreter.stdin", "runs commands read from standard input")
}

func isShell(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch name {
	case "sh", "bash", "dash", "ash", "rbash":
		return true
	}
	return false
}

// hInterpreter: python, node, perl, ... always run code.
func hInterpreter(a *analyzer, c *call) {
	if len(c.args) == 2 && !c.extra && versionOnly(c.name(), c.args[1]) {
		return // prints the version while parsing options, before running anything
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.fromNet {
			a.flag(c, i, Forbidden, "remote_code.subst", "runs code fetched from the network")
			return
		}
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		switch {
		case f.unknown() && !f.procSub:
			a.flag(c, i, Dangerous, "interpreter.code", c.name()+" runs code only known at run time")
			return
		case v == "-c" || v == "-e" || v == "-E" || v == "--eval" || v == "-p" || v == "--print" || v == "-r":
			a.flag(c, i, Dangerous, "interpreter.code", c.name()+" runs inline code")
			return
		case v == "-m":
			a.flag(c, i, Dangerous, "interpreter.code", c.name()+" runs a module, which may be project code")
			return
		case v == "-":
			a.stdinCode(c)
			return
		case strings.HasPrefix(v, "-"):
			continue
		default:
			a.flag(c, i, Dangerous, "interpreter.script", c.name()+" runs the script "+f.raw)
			return
		}
	}
	a.stdinCode(c)
}

// versionOnly reports whether f alone makes the interpreter print its
// version and exit before it loads any code (python's -V exits while
// parsing its command line, before site and sitecustomize).
func versionOnly(name string, f field) bool {
	if f.unknown() {
		return false
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch v := f.val; {
	case v == "--version":
		return isPython(name) || slices.Contains([]string{"node", "nodejs", "perl", "ruby", "php", "deno", "bun", "Rscript"}, name)
	case isPython(name):
		return v == "-V" || v == "-VV"
	case name == "node" || name == "nodejs" || name == "perl" || name == "php":
		return v == "-v"
	}
	return false
}

// hEval re-parses a literal argument list; anything computed is unknown.
func hEval(a *analyzer, c *call) {
	parts := make([]string, 0, len(c.args)-1)
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			if f.fromNet {
				a.flag(c, i, Forbidden, "remote_code.subst", "evaluates code fetched from the network")
				return
			}
			a.flag(c, i, Dangerous, "eval.dynamic", "eval runs code only known at run time")
			return
		}
		parts = append(parts, f.val)
	}
	if len(parts) == 0 {
		return
	}
	a.parseAndWalk(strings.Join(parts, " "), c.args[1].off, 1)
}

func hSource(a *analyzer, c *call) {
	if len(c.args) < 2 {
		a.flag(c, -1, Dangerous, "source", "source without a file")
		return
	}
	f := c.args[1]
	if f.fromNet {
		a.flag(c, 1, Forbidden, "remote_code.procsubst", "runs a script fetched from the network")
		return
	}
	if f.val == "/dev/stdin" {
		a.stdinCode(c)
		return
	}
	a.flag(c, 0, Dangerous, "source", "runs the file "+f.raw+" in the current shell")
}

// hAlias: alias and trap are dangerous (they change what later words
// run); their command text is still analysed so that nothing forbidden
// hides in it.
func hAlias(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "shell.state", c.name()+" changes what later commands run")
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			continue
		}
		body := f.val
		if c.name() == "alias" {
			_, v, ok := strings.Cut(body, "=")
			if !ok {
				continue
			}
			body = v
		} else if i > 1 || strings.HasPrefix(body, "-") {
			continue
		}
		a.parseAndWalk(body, f.off, 1)
	}
}
