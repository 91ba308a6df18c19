package classifier

import "strings"

// find: read-only without action predicates that run programs, delete
// or write files.

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
