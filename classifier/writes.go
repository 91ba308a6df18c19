package classifier

import "strings"

// Programs that write, delete or change the permissions of files; the
// handlers look for the forbidden forms (wiping /, setuid, raw disks).

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
