package classifier

import (
	"path"
	"strings"
)

// gitRead lists the git subcommands that only read, given the option
// checks in hGit. Repository config can still make them run programs
// (core.fsmonitor, diff.external, core.pager); WithTrustedGit(false)
// makes them dangerous.
var gitRead = map[string]bool{
	"status": true, "log": true, "show": true, "diff": true, "blame": true, "annotate": true,
	"shortlog": true, "rev-parse": true, "rev-list": true, "ls-files": true, "ls-tree": true,
	"describe": true, "cat-file": true, "for-each-ref": true, "show-ref": true, "whatchanged": true,
	"name-rev": true, "merge-base": true, "diff-tree": true, "diff-files": true, "diff-index": true,
	"count-objects": true, "var": true, "check-ignore": true, "check-attr": true, "grep": true,
	"show-branch": true, "cherry": true, "range-diff": true, "version": true, "check-ref-format": true,
	"verify-pack": false,
	// Subcommands with listing forms only, checked below.
	"branch": true, "tag": true, "stash": true, "remote": true, "config": true, "reflog": true,
	"worktree": true, "notes": true,
}

// gitDenyLong are options of read subcommands that write files, run
// programs or open a pager; GNU-style abbreviations count too.
var gitDenyLong = []string{"output", "ext-diff", "open-files-in-pager", "paginate", "help", "exec", "upload-pack", "receive-pack"}

func hGit(a *analyzer, c *call) {
	i := 1
	for ; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			a.flag(c, i, Dangerous, "git.dynamic", "a git argument only known at run time")
			return
		}
		v := f.val
		if !strings.HasPrefix(v, "-") {
			break
		}
		name, val, hasVal := strings.Cut(v, "=")
		switch name {
		case "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
			"--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-lazy-fetch", "--no-advice":
		case "-C", "--git-dir", "--work-tree":
			if !hasVal || name == "-C" {
				i++
				if i >= len(c.args) {
					return
				}
				val = c.args[i].val
				if c.args[i].unknown() {
					val = "/"
				}
			}
			if !localPath(val) {
				a.flag(c, i, Dangerous, "git.elsewhere", "git "+name+" points at another repository, whose config can run programs")
			}
		case "--version":
			return
		case "-c", "--config-env":
			a.flag(c, i, Dangerous, "git.config", "git -c sets config that can run programs (diff.external, core.pager, ...)")
			return
		case "-p", "--paginate":
			a.flag(c, i, Dangerous, "git.pager", "git -p runs the output through a pager")
			return
		case "--exec-path":
			a.flag(c, i, Dangerous, "git.exec_path", "--exec-path changes where git finds its programs")
			return
		default:
			a.flag(c, i, Dangerous, "git.option", "the git option "+name+" is not known read-only")
			return
		}
	}
	if i >= len(c.args) {
		return // git alone prints usage
	}
	sub := c.args[i].val
	if !gitRead[sub] {
		a.flag(c, i, Dangerous, "git.write", "git "+sub+" changes the repository, uses the network or is not known read-only")
		return
	}
	rest := c.args[i+1:]
	for k, f := range rest {
		if f.unknown() {
			if f.mayBeOption() {
				a.flag(c, i+1+k, Dangerous, "argument.unknown", "an argument only known at run time could be an option of git "+sub)
				return
			}
			continue
		}
		v := f.val
		if v == "--" {
			break
		}
		if strings.HasPrefix(v, "--") {
			n, _, _ := strings.Cut(v[2:], "=")
			for _, d := range gitDenyLong {
				if n == d || strings.HasPrefix(d, n) {
					a.flag(c, i+1+k, Dangerous, "git.option", "git "+sub+" --"+d+" writes a file, runs a program or opens a pager")
					return
				}
			}
		} else if sub == "grep" && strings.HasPrefix(v, "-") && strings.Contains(v, "O") {
			a.flag(c, i+1+k, Dangerous, "git.option", "git grep -O opens the files in a pager")
			return
		}
	}
	vals := make([]string, len(rest))
	for k, f := range rest {
		vals[k] = f.val
	}
	if why := gitListingOnly(sub, vals); why != "" {
		a.flag(c, i, Dangerous, "git.write", why)
		return
	}
	a.checkSensitive(c)
	a.gitReadAt = append(a.gitReadAt, Reason{Text: c.args[i].raw, Offset: c.args[i].off})
	if a.opts.untrustedGit {
		a.flag(c, i, Dangerous, "git.untrusted", "in an untrusted repository, its config can make git "+sub+" run programs")
	}
}

// localPath reports whether p stays inside the current directory.
func localPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

// gitListingOnly checks the subcommands that both list and change: it
// returns why the arguments are not a listing, or "".
func gitListingOnly(sub string, args []string) string {
	switch sub {
	case "branch", "tag":
		listFlag := false
		positional := 0
		valueNext := false
		for _, v := range args {
			if valueNext {
				valueNext = false
				continue
			}
			if v == "--" {
				continue
			}
			if !strings.HasPrefix(v, "-") {
				positional++
				continue
			}
			n, _, has := strings.Cut(v, "=")
			switch n {
			case "-l", "--list":
				listFlag = true
			case "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--no-color",
				"--color", "--column", "--no-column", "-i", "--ignore-case", "--abbrev", "--no-abbrev", "-q", "--quiet", "--omit-empty":
				if sub == "tag" && n == "-v" {
					return "git tag -v verifies with an external program"
				}
			case "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format":
				if !has && n != "--merged" && n != "--no-merged" && n != "--contains" && n != "--no-contains" {
					valueNext = true
				}
				if !has && (n == "--contains" || n == "--no-contains" || n == "--merged" || n == "--no-merged") {
					valueNext = true
				}
			default:
				if sub == "tag" && strings.HasPrefix(n, "-n") && isDigits(strings.TrimPrefix(n, "-n")+"0") {
					continue
				}
				return "git " + sub + " " + v + " changes branches or tags"
			}
		}
		if positional > 0 && !listFlag {
			return "git " + sub + " with a name creates it"
		}
	case "stash", "worktree", "notes", "reflog", "remote", "config":
		first := ""
		for _, v := range args {
			if !strings.HasPrefix(v, "-") {
				first = v
				break
			}
		}
		ok := false
		switch sub {
		case "stash":
			ok = first == "list" || first == "show"
		case "worktree":
			ok = first == "list"
		case "notes":
			ok = first == "list" || first == "show"
		case "reflog":
			ok = first == "" || first == "show" || first == "exists" || !isReflogVerb(first)
		case "remote":
			ok = first == "" || first == "get-url"
			for _, v := range args {
				if strings.HasPrefix(v, "-") && v != "-v" && v != "--verbose" && v != "--push" && v != "--all" {
					ok = false
				}
			}
		case "config":
			return gitConfigRead(args)
		}
		if !ok {
			return "git " + sub + " " + first + " changes the repository"
		}
	}
	return ""
}

func isReflogVerb(s string) bool {
	switch s {
	case "expire", "delete", "drop", "write":
		return true
	}
	return false
}

// gitConfigRead allows only the reading forms of git config.
func gitConfigRead(args []string) string {
	read := false
	for _, v := range args {
		n, _, _ := strings.Cut(v, "=")
		switch n {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "get", "list":
			read = true
		case "--show-origin", "--show-scope", "--global", "--local", "--system", "--worktree", "-z", "--null",
			"--name-only", "--type", "--bool", "--int", "--path", "--includes", "--no-includes", "--default", "--all", "--regexp":
		default:
			if strings.HasPrefix(v, "-") {
				return "git config " + v + " may change configuration"
			}
		}
	}
	if !read {
		return "git config without --get or --list writes configuration"
	}
	return ""
}
