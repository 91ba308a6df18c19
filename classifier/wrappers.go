package classifier

import "strings"

// Wrappers run another argv after their own options. Each handler parses
// its option grammar and judges the argv it runs.

// optGrammar describes a wrapper's options: short letters that take a
// value, long names that take a separate value, and options that are
// dangerous.
type optGrammar struct {
	argShort  string
	argLong   []string
	denyShort string
	denyLong  []string
	why       string
	// positional is the number of operands before the command (timeout's
	// DURATION, flock's file).
	positional int
}

// skipOptions parses the options of c from index 1 and returns the index
// of the wrapped command (len(c.args) when there is none).
func (a *analyzer) skipOptions(c *call, g optGrammar) int {
	i := 1
	for ; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			if f.mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of "+c.name())
				return len(c.args)
			}
			break
		}
		v := f.val
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		if strings.HasPrefix(v, "--") {
			n, _, has := strings.Cut(v[2:], "=")
			for _, d := range g.denyLong {
				if n == d || len(n) >= 2 && strings.HasPrefix(d, n) {
					a.flag(c, i, Dangerous, "option."+c.name(), "--"+d+" "+g.why)
				}
			}
			if !has {
				for _, l := range g.argLong {
					if n == l {
						i++
					}
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			if strings.IndexByte(g.denyShort, ch) >= 0 {
				a.flag(c, i, Dangerous, "option."+c.name(), "-"+string(ch)+" "+g.why)
			}
			if strings.IndexByte(g.argShort, ch) >= 0 {
				if j == len(v)-1 {
					i++
				}
				break
			}
		}
	}
	for k := 0; k < g.positional && i < len(c.args); k++ {
		i++
	}
	return i
}

func hEnv(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if f.unknown() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument of env only known at run time")
			return
		}
		switch {
		case v == "--":
			i++
			goto assigns
		case v == "-i" || v == "-" || v == "--ignore-environment" || strings.HasPrefix(v, "--ig"):
			a.flag(c, i, Dangerous, "env.option", "env -i runs the command with an emptied environment")
		case v == "-S" || strings.HasPrefix(v, "-S") || strings.HasPrefix(v, "--sp") || strings.HasPrefix(v, "-vS"):
			a.flag(c, i, Dangerous, "env.split", "env -S splits a string into a command line")
			return
		case v == "-u" || v == "-C" || v == "--unset" || v == "--chdir":
			i++
		case strings.HasPrefix(v, "-u") || strings.HasPrefix(v, "-C") || strings.HasPrefix(v, "--unset=") || strings.HasPrefix(v, "--chdir="):
		case v == "-0" || v == "--null" || v == "-v" || v == "--debug":
		case strings.HasPrefix(v, "-"):
			a.flag(c, i, Dangerous, "env.option", "env option "+v+" is not known")
		default:
			goto assigns
		}
	}
assigns:
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		name, _, ok := strings.Cut(v, "=")
		if !ok || c.args[i].unknown() && !strings.Contains(c.args[i].lead, "=") {
			break
		}
		if !harmlessEnv(name) || c.args[i].unknown() {
			a.flag(c, i, Dangerous, "env.assign", "setting "+name+" can change what the command does")
		}
	}
	if i >= len(c.args) {
		if a.cur != nil {
			a.cur.envDump = true
		}
		return
	}
	a.inner(c, i)
}

func hCommand(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument of command only known at run time")
			return
		}
		if !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			i++
			break
		}
		if strings.ContainsAny(v, "vV") {
			return // lookup only
		}
	}
	a.inner(c, i)
}

func hBuiltin(a *analyzer, c *call) { a.inner(c, 1) }

func hExec(a *analyzer, c *call) {
	if len(c.args) == 1 {
		if c.stmt != nil && len(c.stmt.Redirs) > 0 {
			a.flag(c, 0, Dangerous, "shell.state", "exec with redirections changes the shell's file descriptors for later commands")
		}
		return
	}
	i := a.skipOptions(c, optGrammar{argShort: "a", denyShort: "cla", why: "changes how the program is started"})
	a.inner(c, i)
}

func hTime(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{argShort: "fo", argLong: []string{"format", "output"}, denyShort: "o", denyLong: []string{"output"}, why: "writes a file"})
	a.inner(c, i)
}

func hTimeout(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{argShort: "sk", argLong: []string{"signal", "kill-after"}, positional: 1})
	a.inner(c, i)
}

func hNice(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() {
			break
		}
		if v == "-n" || v == "--adjustment" {
			i++
			continue
		}
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") {
			break
		}
	}
	a.inner(c, i)
}

func hNohup(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "nohup may create nohup.out")
	i := a.skipOptions(c, optGrammar{})
	a.inner(c, i)
}

func hStdbuf(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{argShort: "ioe", argLong: []string{"input", "output", "error"}})
	a.inner(c, i)
}

func hSetsid(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{})
	a.inner(c, i)
}

func hIonice(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{argShort: "cnpPu", argLong: []string{"class", "classdata", "pid", "pgid", "uid"}, denyShort: "pPu", denyLong: []string{"pid", "pgid", "uid"}, why: "changes another process"})
	a.inner(c, i)
}

func hBusybox(a *analyzer, c *call) { a.inner(c, 1) }

func hXargs(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{
		argShort: "adEeIiLlnPs",
		argLong:  []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
	})
	if i >= len(c.args) {
		return // runs echo
	}
	n := &call{args: c.args[i:], text: c.text, off: c.off, stmt: c.stmt, extra: true, depth: c.depth + 1}
	a.judge(n)
}

func hWatch(a *analyzer, c *call) {
	exec := false
	for _, f := range c.args[1:] {
		if f.val == "-x" || f.val == "--exec" {
			exec = true
		}
	}
	i := a.skipOptions(c, optGrammar{argShort: "nqd", argLong: []string{"interval", "equexit"}})
	if i >= len(c.args) {
		return
	}
	if exec {
		a.inner(c, i)
		return
	}
	parts := make([]string, 0, len(c.args)-i)
	for _, f := range c.args[i:] {
		if f.unknown() {
			a.flag(c, i, Dangerous, "argument.unknown", "watch runs a command line only known at run time")
			return
		}
		parts = append(parts, f.val)
	}
	a.parseAndWalk(strings.Join(parts, " "), c.args[i].off, 1)
}

func hFlock(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "flock creates its lock file")
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if v == "-c" || v == "--command" {
			if i+1 < len(c.args) && !c.args[i+1].unknown() {
				a.parseAndWalk(c.args[i+1].val, c.args[i+1].off, 1)
			}
			return
		}
	}
	i := a.skipOptions(c, optGrammar{argShort: "wE", argLong: []string{"timeout", "wait", "conflict-exit-code"}, positional: 1})
	a.inner(c, i)
}
