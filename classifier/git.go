package classifier

import "strings"

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
	"worktree": true, "notes": true, "symbolic-ref": true,
}

// gitDenyLong are options of read subcommands that write files, run
// programs or open a pager; GNU-style abbreviations count too.
// --recurse-submodules and --submodule run git in submodules, whose
// config is not trusted; --show-signature runs gpg.
var gitDenyLong = []string{"output", "ext-diff", "open-files-in-pager", "paginate", "help", "exec", "upload-pack",
	"receive-pack", "recurse-submodules", "submodule", "show-signature"}

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
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
			"--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-lazy-fetch", "--no-advice":
		case "-C", "--git-dir", "--work-tree":
			// Another directory may be a nested repository, a submodule or
			// any other repository the agent wrote: its config (core.fsmonitor,
			// core.pager, diff.external) is not the trusted workspace's.
			a.flag(c, i, Dangerous, "git.elsewhere", "git "+name+" runs git in another repository, whose config can run programs")
			return
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
			if gitFormatRunsGPG(v) {
				a.flag(c, i+1+k, Dangerous, "git.option", "a %G placeholder makes git verify signatures with gpg")
				return
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
	a.gitReadAt = append(a.gitReadAt, Reason{Text: c.args[i].raw, Offset: c.args[i].off})
	if a.opts.untrustedGit {
		a.flag(c, i, Dangerous, "git.untrusted", "in an untrusted repository, its config can make git "+sub+" run programs")
	}
}

// gitListingOnly checks the subcommands that both list and change: it
// returns why the arguments are not a listing, or "".
func gitListingOnly(sub string, args []string) string {
	if check := gitListing[sub]; check != nil {
		return check(args)
	}
	return ""
}

// gitListing holds, per subcommand that both lists and changes, the check
// that returns why its arguments are not a listing, or "".
var gitListing = map[string]func(args []string) string{
	"branch":       func(args []string) string { return gitBranchTagListing("branch", args) },
	"tag":          func(args []string) string { return gitBranchTagListing("tag", args) },
	"stash":        gitStashListing,
	"worktree":     gitWorktreeListing,
	"notes":        gitNotesListing,
	"reflog":       gitReflogListing,
	"remote":       gitRemoteListing,
	"symbolic-ref": gitSymbolicRefListing,
	"config":       gitConfigRead,
}

// gitStashListing: the verb must come first (git stash -m list pushes).
func gitStashListing(args []string) string {
	if len(args) == 0 || args[0] != "list" && args[0] != "show" {
		return "git stash without list or show first saves and resets changes"
	}
	return ""
}

func gitWorktreeListing(args []string) string {
	if len(args) == 0 || args[0] != "list" {
		return "git worktree without list first changes worktrees"
	}
	return ""
}

func gitNotesListing(args []string) string {
	rest := args
	for len(rest) > 0 && strings.HasPrefix(rest[0], "--ref=") {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != "list" && rest[0] != "show" {
		return "git notes " + rest[0] + " changes notes"
	}
	return ""
}

func gitReflogListing(args []string) string {
	for _, v := range args {
		if isReflogVerb(v) {
			return "git reflog " + v + " changes the reflog"
		}
	}
	return ""
}

// gitBranchTagListing: git branch and git tag list with -l/--list or with
// no name, and only with the listing options.
func gitBranchTagListing(sub string, args []string) string {
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
			valueNext = !has
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
	return ""
}

// gitRemoteListing: git remote [-v] and git remote get-url.
func gitRemoteListing(args []string) string {
	first := ""
	for _, v := range args {
		if !strings.HasPrefix(v, "-") {
			first = v
			break
		}
		if v != "-v" && v != "--verbose" && v != "--push" && v != "--all" {
			return "git remote " + v + " is not a listing"
		}
	}
	if first != "" && (first != "get-url" || args[0] != "get-url" && args[0] != "-v" && args[0] != "--verbose") {
		return "git remote " + first + " changes remotes or uses the network"
	}
	return ""
}

// gitSymbolicRefListing: git symbolic-ref reads with exactly one name.
func gitSymbolicRefListing(args []string) string {
	positional := 0
	for _, v := range args {
		switch v {
		case "-q", "--quiet", "--short", "--no-recurse", "--recurse":
		default:
			if strings.HasPrefix(v, "-") {
				return "git symbolic-ref " + v + " changes a reference"
			}
			positional++
		}
	}
	if positional != 1 {
		return "git symbolic-ref with a target changes a reference"
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

// gitConfigRead allows only the reading forms of git config: --get and
// friends, --list, the get and list verbs, and a lone key.
func gitConfigRead(args []string) string {
	read := false
	positional := 0
	for k := 0; k < len(args); k++ {
		v := args[k]
		if !strings.HasPrefix(v, "-") {
			if k == 0 && (v == "get" || v == "list") {
				read = true
				continue
			}
			if k == 0 && (v == "set" || v == "unset" || v == "edit" || v == "rename-section" || v == "remove-section") {
				return "git config " + v + " changes configuration"
			}
			positional++
			continue
		}
		n, _, has := strings.Cut(v, "=")
		switch n {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list":
			read = true
		case "--show-origin", "--show-scope", "--global", "--local", "--system", "--worktree", "-z", "--null",
			"--name-only", "--bool", "--int", "--path", "--bool-or-int", "--expiry-date", "--includes",
			"--no-includes", "--all", "--regexp", "--fixed-value", "--show-names", "--no-show-names":
		case "--type", "--default", "-f", "--file", "--blob", "--url", "--value":
			if !has {
				k++
			}
		default:
			return "git config " + v + " may change configuration or open an editor"
		}
	}
	if read || positional == 1 {
		return ""
	}
	return "git config with a key and a value writes configuration"
}

// gitFormatRunsGPG reports whether a --format/--pretty value holds a
// signature placeholder (%G?, %GS, ...), which runs gpg.
func gitFormatRunsGPG(v string) bool {
	n, val, ok := strings.Cut(v, "=")
	if !ok {
		return false
	}
	switch n {
	case "--format", "--pretty":
		return strings.Contains(val, "%G")
	}
	return false
}
