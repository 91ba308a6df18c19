package classifier

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Handlers for programs with their own grammar. Each one records findings
// on the analyzer; a handler that records nothing leaves the call
// read_only.

// hFind: find is read-only without action predicates that run programs,
// delete or write files.
func hFind(a *analyzer, c *call) {
	var paths []field
	inExpr := false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			if f.mayBeOption() || inExpr {
				a.flag(c, i, Dangerous, "argument.unknown", "this argument is only known at run time and could be an action of find")
			}
			continue
		}
		v := f.val
		if !inExpr {
			switch {
			case v == "-H" || v == "-L" || v == "-P":
				continue
			case v == "-D" || strings.HasPrefix(v, "-O"):
				if v == "-D" {
					i++
				}
				continue
			case !strings.HasPrefix(v, "-") && v != "(" && v != "!" && v != ")":
				paths = append(paths, f)
				continue
			}
			inExpr = true
		}
		switch v {
		case "-exec", "-execdir", "-ok", "-okdir":
			a.flag(c, i, Dangerous, "find.exec", v+" runs another program for every file found")
			j := i + 1
			var inner []field
			for ; j < len(c.args); j++ {
				if !c.args[j].unknown() && (c.args[j].val == ";" || c.args[j].val == "+") {
					break
				}
				g := c.args[j]
				if strings.Contains(g.val, "{}") {
					g.dynamic = true
					g.lead = strings.SplitN(g.val, "{}", 2)[0]
				}
				inner = append(inner, g)
			}
			if len(inner) > 0 {
				a.judge(&call{args: inner, text: c.text, off: c.off, stmt: c.stmt, depth: c.depth + 1})
				prog := inner[0].val
				if k := strings.LastIndexByte(prog, '/'); k >= 0 {
					prog = prog[k+1:]
				}
				switch prog {
				case "rm", "shred", "unlink", "chmod", "chown", "chgrp", "truncate":
					for _, p := range paths {
						if what, ok := protectedPath(p); ok {
							a.flag(c, i, Forbidden, "wipe.protected", "runs "+prog+" on everything under "+what)
						}
					}
				}
			}
			i = j
		case "-delete":
			a.flag(c, i, Dangerous, "find.delete", "-delete removes the files found")
			for _, p := range paths {
				if what, ok := protectedPath(p); ok {
					a.flag(c, i, Forbidden, "wipe.protected", "deletes everything under "+what)
				}
			}
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			a.flag(c, i, Dangerous, "find.write", v+" writes to a file")
		}
	}
}

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

// hDate: date sets the clock with -s or an operand not starting with +.
func hDate(a *analyzer, c *call) {
	s := roDeny("s", []string{"set"}, "set the system clock", true, "dfrIs")
	s.argLong = []string{"date", "file", "reference"}
	a.checkOptions(c, s)
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if strings.HasPrefix(v, "-") {
			if (v == "-d" || v == "-f" || v == "-r" || v == "--date" || v == "--file" || v == "--reference") && i+1 < len(c.args) {
				i++
			}
			continue
		}
		if !strings.HasPrefix(v, "+") || c.args[i].unknown() && !strings.HasPrefix(c.args[i].lead, "+") {
			a.flag(c, i, Dangerous, "date.set", "an operand that is not a +FORMAT sets the system clock")
		}
	}
}

// hHostname: any operand (or -F/-b) sets the host name.
func hHostname(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() || !strings.HasPrefix(v, "-") || v == "-F" || v == "-b" || strings.HasPrefix(v, "--file") || strings.HasPrefix(v, "--boot") {
			a.flag(c, i, Dangerous, "hostname.set", "hostname with an operand changes the host name")
		}
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

// recursiveFlag reports whether an option of rm/chmod/chown asks for
// recursion. upperOnly is for chmod, whose -r is a mode.
func recursiveFlag(v string, upperOnly bool) bool {
	if strings.HasPrefix(v, "--") {
		n, _, _ := strings.Cut(v[2:], "=")
		return len(n) >= 3 && strings.HasPrefix("recursive", n)
	}
	if !strings.HasPrefix(v, "-") {
		return false
	}
	if strings.ContainsRune(v[1:], 'R') {
		return true
	}
	return !upperOnly && strings.ContainsRune(v[1:], 'r')
}

// hRm: rm deletes files; recursive removal of /, ~ or a system
// directory is forbidden.
func hRm(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.delete", "deletes files")
	recursive := false
	endOpts := false
	var targets []int
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		switch {
		case !endOpts && f.val == "--":
			endOpts = true
		case !endOpts && f.unknown() && f.mayBeOption():
			recursive = true // could be -r
			targets = append(targets, i)
		case !endOpts && strings.HasPrefix(f.val, "-") && f.val != "-":
			if strings.HasPrefix(f.val, "--no-pres") {
				a.flag(c, i, Forbidden, "wipe.root", "--no-preserve-root allows deleting /")
			}
			if recursiveFlag(f.val, false) {
				recursive = true
			}
		default:
			targets = append(targets, i)
		}
	}
	if !recursive {
		return
	}
	for _, i := range targets {
		if what, ok := protectedPath(c.args[i]); ok {
			a.flag(c, i, Forbidden, "wipe.protected", "recursively deletes "+what)
		}
		switch strings.TrimRight(c.args[i].val, "/") {
		case "*", ".", "./*", ".*", "..":
			if a.cdProtected != "" {
				a.flag(c, i, Forbidden, "wipe.protected", "recursively deletes everything in "+a.cdProtected+" (after cd)")
			}
		}
	}
}

// hChmod: chmod/chown/chgrp change permissions; recursive changes of
// protected paths and setuid/setgid bits are forbidden.
func hChmod(a *analyzer, c *call) {
	name := c.name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	a.flag(c, 0, Dangerous, "writes.permissions", "changes permissions or ownership")
	recursive := false
	var ops []int
	endOpts := false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		switch {
		case !endOpts && v == "--":
			endOpts = true
		case !endOpts && strings.HasPrefix(v, "--"):
			if recursiveFlag(v, true) {
				recursive = true
			}
		case !endOpts && strings.HasPrefix(v, "-") && len(v) > 1 && !(name == "chmod" && isModeLike(v)):
			if recursiveFlag(v, true) {
				recursive = true
			}
		default:
			ops = append(ops, i)
		}
	}
	if name == "chmod" && len(ops) > 0 {
		if setuidMode(c.args[ops[0]].val) {
			a.flag(c, ops[0], Forbidden, "setuid", "sets the setuid or setgid bit, which runs the file with its owner's privileges")
		}
		ops = ops[1:]
	} else if len(ops) > 0 {
		ops = ops[1:] // owner or group
	}
	if !recursive {
		return
	}
	for _, i := range ops {
		if what, ok := protectedPath(c.args[i]); ok {
			a.flag(c, i, Forbidden, "wipe.protected", "recursively changes permissions or ownership of "+what)
		}
	}
}

func isModeLike(v string) bool {
	for i := 1; i < len(v); i++ {
		if !strings.ContainsRune("rwxXstugo+-=,01234567", rune(v[i])) {
			return false
		}
	}
	return !strings.ContainsRune(v[1:], 'R')
}

// setuidMode reports whether a chmod mode sets the setuid or setgid bit.
func setuidMode(m string) bool {
	if isDigits(m) {
		if len(m) >= 4 {
			d := m[len(m)-4]
			return d == '2' || d == '4' || d == '6' || d == '3' || d == '5' || d == '7'
		}
		return false
	}
	for _, clause := range strings.Split(m, ",") {
		k := strings.IndexAny(clause, "+=")
		if k >= 0 && strings.ContainsRune(clause[k:], 's') {
			// "+s" after "-s" in one clause still sets it.
			rest := clause[k:]
			if j := strings.IndexAny(rest, "-"); j < 0 || strings.Contains(rest[:j], "s") || strings.LastIndexAny(rest, "+=") > j {
				return true
			}
		}
	}
	return false
}

// hDd: dd writes its of= target; a block device is forbidden.
func hDd(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "dd copies raw data and can overwrite files")
	for i := 1; i < len(c.args); i++ {
		if v, ok := strings.CutPrefix(c.args[i].val, "of="); ok && blockDevice(v) {
			a.flag(c, i, Forbidden, "disk.raw_write", "writes straight to a block device, destroying its data")
		}
	}
}

// writeTargets checks operands that a command writes to.
func (a *analyzer) writeTargets(c *call, from int) {
	endOpts := false
	for i := from; i < len(c.args); i++ {
		f := c.args[i]
		if !endOpts && f.val == "--" {
			endOpts = true
			continue
		}
		if !endOpts && strings.HasPrefix(f.val, "-") && !f.unknown() {
			continue
		}
		switch {
		case f.unknown():
			a.flag(c, i, Dangerous, "writes.files", "writes to a file only known at run time")
		case blockDevice(f.val):
			a.flag(c, i, Forbidden, "disk.raw_write", "writes straight to a block device, destroying its data")
		case harmlessSink(f.val):
		default:
			a.flag(c, i, Dangerous, "writes.files", "writes to the file "+f.val)
		}
	}
}

// hTee: tee writes to every operand.
func hTee(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		if v := c.args[i].val; strings.HasPrefix(v, "--") && !strings.HasPrefix(v, "--append") && !strings.HasPrefix(v, "--ignore") && !strings.HasPrefix(v, "--output-error") {
			a.flag(c, i, Dangerous, "option.tee", "unknown tee option")
		}
	}
	a.writeTargets(c, 1)
}

func hShred(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.delete", "shred overwrites files")
	for i := 1; i < len(c.args); i++ {
		if blockDevice(c.args[i].val) {
			a.flag(c, i, Forbidden, "disk.raw_write", "overwrites a block device")
		}
	}
}

func hInstall(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "install copies files and sets their modes")
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		mode := ""
		switch {
		case (v == "-m" || v == "--mode") && i+1 < len(c.args):
			mode = c.args[i+1].val
		case strings.HasPrefix(v, "--mode="):
			mode = v[len("--mode="):]
		case strings.HasPrefix(v, "-m") && len(v) > 2:
			mode = v[2:]
		}
		if mode != "" && setuidMode(mode) {
			a.flag(c, i, Forbidden, "setuid", "installs a setuid or setgid file")
		}
	}
}

// hCp: cp and mv write their destination; a block device is forbidden.
func hCp(a *analyzer, c *call) {
	a.flag(c, 0, Dangerous, "writes.files", "copies or moves files")
	for i := 1; i < len(c.args); i++ {
		if blockDevice(c.args[i].val) && i == len(c.args)-1 {
			a.flag(c, i, Forbidden, "disk.raw_write", "writes straight to a block device, destroying its data")
		}
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

func hSystemctl(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		switch c.args[i].val {
		case "poweroff", "reboot", "halt", "kexec", "emergency", "rescue", "soft-reboot":
			a.flag(c, i, Forbidden, "host.power", "shuts down or reboots the host")
			return
		}
	}
	a.flag(c, 0, Dangerous, "system", "manages system services")
}

func hInit(a *analyzer, c *call) {
	if len(c.args) > 1 && (c.args[1].val == "0" || c.args[1].val == "6") {
		a.flag(c, 1, Forbidden, "host.power", "shuts down or reboots the host")
		return
	}
	a.flag(c, 0, Dangerous, "system", "changes the system's run level")
}

// hUnzip: unzip only lists or tests with -l, -v, -t, -Z, or prints with
// -p/-c; everything else extracts.
func hUnzip(a *analyzer, c *call) {
	listing := false
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() && c.args[i].mayBeOption() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of unzip")
			return
		}
		if !strings.HasPrefix(v, "-") || len(v) < 2 {
			continue
		}
		for _, ch := range v[1:] {
			switch ch {
			case 'l', 'v', 't', 'Z', 'p', 'c':
				listing = true
			case 'q', 'z', '1', '2', 's', 'm', 'h', 'T':
			default:
				a.flag(c, i, Dangerous, "archive.extract", "unzip -"+string(ch)+" may extract or change files")
				return
			}
		}
	}
	if !listing {
		a.flag(c, 0, Dangerous, "archive.extract", "unzip extracts files")
	}
	a.checkSensitive(c)
}

// hTar: tar is read-only only in list mode (-t) without options that run
// programs or write files.
func hTar(a *analyzer, c *call) {
	list := false
	var pendingArgs int // old-style bundled options taking a value
	allowedLong := map[string]bool{
		"list": true, "file": true, "gzip": true, "gunzip": true, "bzip2": true, "xz": true, "lzma": true,
		"zstd": true, "auto-compress": true, "verbose": true, "wildcards": true, "no-wildcards": true,
		"exclude": true, "anchored": true, "ignore-case": true, "numeric-owner": true, "utc": true,
		"full-time": true, "ignore-zeros": true, "totals": true, "quoting-style": true, "occurrence": true,
		"show-transformed-names": true, "force-local": true, "lzip": true, "lzop": true, "no-recursion": true,
	}
	checkFile := func(i int) {
		if i >= len(c.args) {
			return
		}
		f := c.args[i]
		if f.unknown() || strings.Contains(f.val, ":") {
			a.flag(c, i, Dangerous, "tar.remote", "a tar archive name with ':' or only known at run time may run a remote shell")
		}
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if pendingArgs > 0 {
			pendingArgs--
			continue
		}
		if f.unknown() {
			if f.mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of tar")
			}
			continue
		}
		switch {
		case strings.HasPrefix(v, "--"):
			n, val, has := strings.Cut(v[2:], "=")
			if !allowedLong[n] {
				a.flag(c, i, Dangerous, "tar.option", "--"+n+" is not a known read-only tar option")
				continue
			}
			if n == "list" {
				list = true
			}
			if n == "file" {
				if has {
					if strings.Contains(val, ":") {
						a.flag(c, i, Dangerous, "tar.remote", "an archive name with ':' makes tar run a remote shell")
					}
				} else {
					checkFile(i + 1)
					i++
				}
			}
			if (n == "exclude" || n == "quoting-style" || n == "occurrence") && !has {
				i++
			}
		case strings.HasPrefix(v, "-") || i == 1:
			letters := strings.TrimPrefix(v, "-")
			oldStyle := !strings.HasPrefix(v, "-")
			for k := 0; k < len(letters); k++ {
				switch ch := letters[k]; ch {
				case 't':
					list = true
				case 'v', 'z', 'j', 'J', 'Z', 'a', 'i', 'O', 'p', 'P', 'S', 'w', 'B', 'R':
				case 'f', 'C', 'X', 'b', 'L', 'N':
					if oldStyle {
						pendingArgs++
						if ch == 'f' {
							checkFile(i + pendingArgs)
						}
						continue
					}
					if k == len(letters)-1 {
						if ch == 'f' {
							checkFile(i + 1)
						}
						i++
					} else if ch == 'f' && strings.Contains(letters[k+1:], ":") {
						a.flag(c, i, Dangerous, "tar.remote", "an archive name with ':' makes tar run a remote shell")
					}
					k = len(letters)
				default:
					a.flag(c, i, Dangerous, "tar.option", "tar -"+string(ch)+" extracts, creates or runs programs")
					k = len(letters)
				}
			}
		}
	}
	if !list {
		a.flag(c, 0, Dangerous, "archive.extract", "tar without -t extracts or creates archives")
	}
}

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
	a.checkSensitive(c)
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
