package classifier

import (
	"slices"
	"strings"
)

// Wrappers run another argv after their own options. Each handler parses
// its option grammar strictly: an option it does not know makes the call
// dangerous, because guessing wrong would shift where the wrapped command
// starts.

// optGrammar describes a wrapper's options.
type optGrammar struct {
	noArg    string   // short options without a value
	argShort string   // short options with a value (attached or next word)
	optArg   string   // short options with an optional attached value
	long     []string // long options without a value
	argLong  []string // long options with a value (=value or next word)
	optLong  []string // long options with an optional =value

	denyShort string   // options that are dangerous in themselves
	denyLong  []string // (checked after the grammar)
	why       string

	// positional is the number of operands before the command (timeout's
	// DURATION, flock's lock file).
	positional int
}

// skipOptions parses the options of c from index 1 and returns the index
// of the wrapped command, len(c.args) when there is none, or -1 when the
// options are not understood (a finding has been recorded).
func (a *analyzer) skipOptions(c *call, g optGrammar) int {
	i := 1
	for ; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			if f.mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of "+c.name())
				return -1
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
			switch {
			case slices.Contains(g.denyLong, n):
				a.flag(c, i, Dangerous, "option."+c.name(), "--"+n+" "+g.why)
				if !has && slices.Contains(g.argLong, n) {
					i++
				}
			case slices.Contains(g.long, n) && !has, slices.Contains(g.optLong, n):
			case slices.Contains(g.argLong, n):
				if !has {
					i++
				}
			default:
				a.flag(c, i, Dangerous, "option.unknown", c.name()+" option --"+n+" is not known")
				return -1
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			if strings.IndexByte(g.denyShort, ch) >= 0 {
				a.flag(c, i, Dangerous, "option."+c.name(), "-"+string(ch)+" "+g.why)
			}
			switch {
			case strings.IndexByte(g.argShort, ch) >= 0:
				if j == len(v)-1 {
					i++
				}
				j = len(v)
			case strings.IndexByte(g.optArg, ch) >= 0:
				j = len(v)
			case strings.IndexByte(g.noArg, ch) >= 0:
			default:
				a.flag(c, i, Dangerous, "option.unknown", c.name()+" option -"+string(ch)+" is not known")
				return -1
			}
		}
	}
	for k := 0; k < g.positional && i < len(c.args); k++ {
		i++
	}
	return i
}

// wrap judges the command after a wrapper's options.
func (a *analyzer) wrap(c *call, g optGrammar) {
	if i := a.skipOptions(c, g); i >= 0 {
		a.inner(c, i)
	}
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
		case v == "-i" || v == "-" || v == "--ignore-environment":
			a.flag(c, i, Dangerous, "env.option", "env -i runs the command with an emptied environment")
		case strings.HasPrefix(v, "-S") || strings.HasPrefix(v, "--split-string") || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "S")):
			a.flag(c, i, Dangerous, "env.split", "env -S splits a string into a command line")
			return
		case v == "-u" || v == "--unset" || strings.HasPrefix(v, "-u") || strings.HasPrefix(v, "--unset="):
			// The sandbox's environment is part of its guarantees (git's
			// program overrides among them): removing any of it is not
			// a read.
			a.flag(c, i, Dangerous, "env.unset", "env -u removes a variable the sandbox sets (such as git's overrides)")
			return
		case v == "-C" || v == "--chdir":
			i++
			if i < len(c.args) {
				a.chdir(c, i, c.args[i])
			}
		case strings.HasPrefix(v, "-C") || strings.HasPrefix(v, "--chdir="):
			d := strings.TrimPrefix(strings.TrimPrefix(v, "-C"), "--chdir=")
			a.chdir(c, i, field{val: d, raw: d})
		case v == "-0" || v == "--null" || v == "-v" || v == "--debug":
		case strings.HasPrefix(v, "-"):
			a.flag(c, i, Dangerous, "env.option", "env option "+v+" is not known")
			return
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

// chdir records a change of directory: git reads after it may run in a
// nested repository, whose config is not trusted.
func (a *analyzer) chdir(c *call, i int, f field) {
	a.cdSeen = true
	a.cdTo(f)
}

func hCd(a *analyzer, c *call) {
	var dir *field
	for i := 1; i < len(c.args); i++ {
		if v := c.args[i].val; !c.args[i].unknown() && (v == "-L" || v == "-P" || v == "-e" || v == "-@" || v == "--") {
			continue
		}
		dir = &c.args[i]
		break
	}
	if dir == nil {
		a.cdSeen = true // $HOME
		a.cdProtected = "the home directory"
		a.cdTo(field{val: "~", pat: "~"})
		return
	}
	if what, ok := protectedPath(*dir); ok {
		a.cdProtected = what
	}
	a.chdir(c, 0, *dir)
}

func hCommand(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument of command only known at run time")
			return
		}
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		if strings.Trim(v[1:], "pvV") != "" {
			a.flag(c, i, Dangerous, "option.unknown", "command option "+v+" is not known")
			return
		}
		if strings.ContainsAny(v, "vV") {
			return // a lookup only
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
	a.wrap(c, optGrammar{noArg: "cl", argShort: "a", denyShort: "cla", why: "changes how the program is started"})
}

func hTime(a *analyzer, c *call) {
	a.wrap(c, optGrammar{noArg: "pvqa", argShort: "fo", long: []string{"portability", "verbose", "quiet", "append"},
		argLong: []string{"format", "output"}, denyShort: "o", denyLong: []string{"output"}, why: "writes a file"})
}

func hTimeout(a *analyzer, c *call) {
	a.wrap(c, optGrammar{noArg: "v", argShort: "sk", long: []string{"foreground", "preserve-status", "verbose"},
		argLong: []string{"signal", "kill-after"}, positional: 1})
}

func hNice(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() {
			if c.args[i].mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument of nice only known at run time")
				return
			}
			break
		}
		switch {
		case v == "-n" || v == "--adjustment":
			i++
		case v == "--":
			a.inner(c, i+1)
			return
		case strings.HasPrefix(v, "--adjustment=") || strings.HasPrefix(v, "-n") && isInteger(v[2:]) || strings.HasPrefix(v, "-") && isInteger(v[1:]):
		case strings.HasPrefix(v, "-"):
			a.flag(c, i, Dangerous, "option.unknown", "nice option "+v+" is not known")
			return
		default:
			a.inner(c, i)
			return
		}
	}
}

func hNohup(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "nohup may create nohup.out")
	a.wrap(c, optGrammar{})
}

func hStdbuf(a *analyzer, c *call) {
	a.wrap(c, optGrammar{argShort: "ioe", argLong: []string{"input", "output", "error"}})
}

func hSetsid(a *analyzer, c *call) {
	a.wrap(c, optGrammar{noArg: "cfw", long: []string{"ctty", "fork", "wait"}})
}

func hIonice(a *analyzer, c *call) {
	a.wrap(c, optGrammar{noArg: "t", argShort: "cnpPu", long: []string{"ignore"},
		argLong: []string{"class", "classdata", "pid", "pgid", "uid"}, denyShort: "pPu",
		denyLong: []string{"pid", "pgid", "uid"}, why: "changes another process"})
}

func hBusybox(a *analyzer, c *call) { a.inner(c, 1) }

func hXargs(a *analyzer, c *call) {
	i := a.skipOptions(c, optGrammar{
		noArg:    "0prtxo",
		argShort: "adEILnPs",
		optArg:   "eil",
		long:     []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits"},
		argLong:  []string{"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
		optLong:  []string{"eof", "replace"},
	})
	if i < 0 || i >= len(c.args) {
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
	i := a.skipOptions(c, optGrammar{
		noArg: "bcCegptwrx", argShort: "nq", optArg: "d",
		long:    []string{"beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap", "exec", "no-rerun"},
		argLong: []string{"interval", "equexit"}, optLong: []string{"differences"},
	})
	if i < 0 || i >= len(c.args) {
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
	a.wrap(c, optGrammar{noArg: "sxeunoF", argShort: "wE",
		long:    []string{"shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"},
		argLong: []string{"timeout", "wait", "conflict-exit-code"}, positional: 1})
}
