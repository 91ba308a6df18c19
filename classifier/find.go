package classifier

import "strings"

// find's expression grammar: every predicate is known, with its number of
// values; an unknown one makes the call dangerous.

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
					g.pat = strings.ReplaceAll(g.pat, `\{\}`, "**") // any file found
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
		default:
			n, known := findArity(v)
			if !known {
				// Keep scanning: a later -delete under / is still forbidden.
				a.flag(c, i, Dangerous, "find.unknown", v+" is not a known read-only find predicate")
			}
			for k := i + 1; k <= i+n && k < len(c.args); k++ {
				if c.args[k].unknown() {
					// A glob may expand to several words: the later
					// ones are read as predicates (-delete).
					a.flag(c, k, Dangerous, "argument.unknown", "this value is only known at run time and may expand into find predicates")
				}
			}
			i += n
		}
	}
}

// findArgs maps the read-only predicates, options and operators of GNU
// find to the number of words they take.
var findArgs = map[string]int{
	"(": 0, ")": 0, "!": 0, ",": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0,
	"-depth": 0, "-d": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-mount": 0,
	"-xdev": 0, "-noleaf": 0, "-daystart": 0, "-follow": 0, "-nowarn": 0, "-warn": 0,
	"-regextype": 1, "-maxdepth": 1, "-mindepth": 1, "-files0-from": 1,
	"-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-ctime": 1, "-fstype": 1,
	"-gid": 1, "-group": 1, "-ilname": 1, "-iname": 1, "-inum": 1, "-ipath": 1, "-iregex": 1,
	"-iwholename": 1, "-links": 1, "-lname": 1, "-mmin": 1, "-mtime": 1, "-name": 1, "-newer": 1,
	"-path": 1, "-perm": 1, "-regex": 1, "-samefile": 1, "-size": 1, "-type": 1, "-uid": 1,
	"-used": 1, "-user": 1, "-wholename": 1, "-xtype": 1, "-context": 1,
	"-empty": 0, "-executable": 0, "-false": 0, "-nogroup": 0, "-nouser": 0, "-readable": 0,
	"-true": 0, "-writable": 0, "-print": 0, "-print0": 0, "-printf": 1, "-ls": 0, "-prune": 0,
	"-quit": 0, "-help": 0, "--help": 0, "-version": 0, "--version": 0,
}

// findArity returns how many words the predicate v takes.
func findArity(v string) (int, bool) {
	if n, ok := findArgs[v]; ok {
		return n, true
	}
	// -newerXY with X and Y among a, B, c, m, t.
	if rest, ok := strings.CutPrefix(v, "-newer"); ok && len(rest) == 2 &&
		strings.IndexByte("aBcm", rest[0]) >= 0 && strings.IndexByte("aBcmt", rest[1]) >= 0 {
		return 1, true
	}
	return 0, false
}
