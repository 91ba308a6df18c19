package classifier

import (
	"slices"
	"strings"
)

// Shell builtins (and their external twins) with their own grammar.

// hPrintf: printf -v assigns a variable (and evaluates a subscript).
func hPrintf(a *analyzer, c *call) {
	if len(c.args) < 2 {
		return
	}
	f := c.args[1]
	if f.mayBeOption() && (f.unknown() || strings.HasPrefix(f.val, "-v")) {
		a.flag(c, 1, Dangerous, "printf.assign", "printf -v assigns a shell variable; its subscript can run commands")
	}
}

// hTest: test -v evaluates a subscript, so may operands of -eq and
// friends; an unquoted run-time operand could split into both.
func hTest(a *analyzer, c *call) {
	arith := func(v string) bool {
		switch v {
		case "-v", "-R", "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			return true
		}
		return false
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			quoted := f.dquoted && !f.glob
			nearArith := i > 1 && arith(c.args[i-1].val) || i+1 < len(c.args) && arith(c.args[i+1].val)
			if !quoted || nearArith {
				a.flag(c, i, Dangerous, "argument.unknown", "a test operand only known at run time could evaluate a subscript")
			}
			continue
		}
		switch f.val {
		case "-v", "-R":
			if i+1 < len(c.args) && strings.Contains(c.args[i+1].val, "[") {
				a.flag(c, i+1, Dangerous, "arith.test", "a subscript in test -v is evaluated as arithmetic and can run commands")
			}
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			for _, j := range []int{i - 1, i + 1} {
				if j > 0 && j < len(c.args) && !isInteger(c.args[j].val) {
					a.flag(c, j, Dangerous, "arith.test", "an operand of "+f.val+" that is not a number may be evaluated as arithmetic")
				}
			}
		}
	}
}

// hKill: kill is dangerous; a pid of -1 (every process) is forbidden.
func hKill(a *analyzer, c *call) {
	sigSeen := false
	list := false
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		switch {
		case c.args[i].unknown():
			continue
		case v == "--":
			for _, g := range c.args[i+1:] {
				if g.val == "-1" {
					a.flag(c, -1, Forbidden, "kill.all", "kill -1 signals every process the user owns")
				}
			}
			i = len(c.args)
		case v == "-s" || v == "-n":
			i++
			sigSeen = true
		case v == "-l" || v == "-L" || strings.HasPrefix(v, "--list") || strings.HasPrefix(v, "--table"):
			list = true
		case strings.HasPrefix(v, "-") && !sigSeen:
			sigSeen = true
		case v == "-1":
			a.flag(c, i, Forbidden, "kill.all", "kill -1 signals every process the user owns")
		}
	}
	if !list {
		a.flag(c, 0, Dangerous, "processes", "signals other processes")
	}
}

// hSet: set with only error-handling options is harmless; without
// arguments it prints every variable.
func hSet(a *analyzer, c *call) {
	if len(c.args) == 1 {
		if a.cur != nil {
			a.cur.envDump = true
		}
		return
	}
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		switch v {
		case "-e", "+e", "-u", "+u", "-E", "+E", "-eu", "-ue", "-euo", "-eEuo", "-Eeuo", "-o", "+o":
			if v == "-o" || v == "+o" || strings.HasSuffix(v, "o") {
				if i+1 < len(c.args) {
					switch c.args[i+1].val {
					case "pipefail", "errexit", "nounset", "errtrace":
						i++
						continue
					}
				}
				a.flag(c, i, Dangerous, "shell.state", "set changes shell options for later commands")
				return
			}
			continue
		}
		a.flag(c, i, Dangerous, "shell.state", "set changes shell options or positional parameters for later commands")
		return
	}
}

func hUmask(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		if v := c.args[i].val; v != "-S" && v != "-p" {
			a.flag(c, i, Dangerous, "shell.state", "umask changes the mode of files created later")
		}
	}
}

// hPopd: popd changes the current directory to one pushed before, so git
// after it may run in another repository.
func hPopd(a *analyzer, c *call) {
	a.cdSeen = true
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if f.unknown() || !(v == "-n" || len(v) > 1 && (v[0] == '+' || v[0] == '-') && isDigits(v[1:])) {
			a.flag(c, i, Dangerous, "option.unknown", "popd argument "+f.raw+" is not a known read-only form")
			return
		}
	}
}

// hCaller: caller prints the call stack; its only operand is a frame
// number, which bash reads as a plain number (no arithmetic).
func hCaller(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		if f := c.args[i]; f.unknown() || !isDigits(f.val) || i > 1 {
			a.flag(c, i, Dangerous, "option.unknown", "caller takes one frame number")
			return
		}
	}
}

// hXxd: xxd matches its options by the start of each word (-c, -cols,
// -ps, -postscript), never bundles them, and writes a second operand.
func hXxd(a *analyzer, c *call) {
	flags := []string{"-a", "-autoskip", "-b", "-bits", "-C", "-capitalize", "-e", "-E", "-EBCDIC", "-h", "-help",
		"-i", "-include", "-p", "-ps", "-postscript", "-plain", "-u", "-uppercase", "-v", "-version", "-d", "-r", "-revert"}
	valued := []string{"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name", "-R"}
	operands := 0
	endOpts := false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		switch {
		case f.unknown():
			if !endOpts && f.mayBeOption() || f.glob || f.splits() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option or an output file of xxd")
				return
			}
			operands++
		case endOpts || !strings.HasPrefix(v, "-") || v == "-":
			operands++
		case v == "--":
			endOpts = true
		case slices.Contains(flags, v):
		case slices.Contains(valued, v):
			if i+1 < len(c.args) && (c.args[i+1].glob || c.args[i+1].splits()) {
				a.flag(c, i+1, Dangerous, "argument.unknown", "this value may expand to several words")
				return
			}
			i++
		case len(v) > 2 && strings.ContainsRune("cglosn", rune(v[1])) && isDigits(strings.TrimPrefix(v[2:], "+")):
		default:
			a.flag(c, i, Dangerous, "option.unknown", v+" is not a known read-only option of xxd")
			return
		}
	}
	if operands > 1 {
		a.flag(c, -1, Dangerous, "operand.xxd", "xxd with a second operand writes it")
	}
}

// hJobs: jobs lists jobs; jobs -x runs its arguments as a command (with
// job specs replaced by process group ids), so that command is judged.
func hJobs(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		switch {
		case f.unknown():
			if f.mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument of jobs only known at run time could be -x, which runs a command")
			}
			return
		case v == "--":
			return
		case v == "-x":
			a.flag(c, i, Dangerous, "builtin.jobs_x", "jobs -x runs its arguments as a command")
			a.inner(c, i+1)
			return
		case !strings.HasPrefix(v, "-") || v == "-":
			return // job specs
		case strings.Trim(v[1:], "lnprs") != "":
			a.flag(c, i, Dangerous, "option.unknown", "jobs option "+v+" is not known read-only")
			return
		}
	}
}
