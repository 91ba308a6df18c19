package classifier

import "strings"

// hAwk: an awk program is read-only unless it can run commands or write
// files (system, pipes, redirections, getline from a command).
func hAwk(a *analyzer, c *call) {
	// prog is the index of the program text (0: the program came from
	// -e, the operands are files); sourced is set by -e, after which
	// option scanning goes on, since gawk joins -e text with -f files.
	prog := -1
	sourced := false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if f.unknown() && f.mayBeOption() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an awk option or program")
			return
		}
		if prog >= 0 {
			break
		}
		switch {
		case v == "--":
			if i+1 < len(c.args) && !sourced {
				prog = i + 1
			} else {
				prog = 0
			}
			i = len(c.args)
		case v == "-F" || v == "-v":
			i++
		case strings.HasPrefix(v, "-F") || strings.HasPrefix(v, "-v"):
		case v == "-e" || v == "--source":
			if i+1 < len(c.args) {
				a.awkProgram(c, i+1)
			}
			i++
			sourced = true
		case v == "--sandbox" || v == "-S" || v == "--posix" || v == "-P" || v == "--traditional" ||
			v == "-c" || v == "--characters-as-bytes" || v == "-b" || v == "-N" || v == "-s" || v == "--no-optimize":
		case strings.HasPrefix(v, "-"):
			a.flag(c, i, Dangerous, "awk.option", "awk option "+v+" reads a program file, loads an extension or writes a file")
			return
		default:
			if sourced {
				prog = 0 // operands: input files and assignments
			} else {
				prog = i
			}
		}
		if prog > 0 {
			a.awkProgram(c, prog)
		}
	}
}

func (a *analyzer) awkProgram(c *call, i int) {
	f := c.args[i]
	if f.unknown() {
		a.flag(c, i, Dangerous, "awk.program", "the awk program is only known at run time")
		return
	}
	bad := []string{"system", "getline", "@", "close", "fflush", "ENVIRON", "PROCINFO"}
	if strings.Contains(f.val, "print") {
		// After print or printf, > and | redirect output to a file or
		// a command; elsewhere they are comparisons and logical or.
		bad = append(bad, ">", "|")
	}
	for _, b := range bad {
		if strings.Contains(f.val, b) {
			a.flag(c, i, Dangerous, "awk.program", "the awk program uses "+b+", which can run commands or write files")
			return
		}
	}
}
