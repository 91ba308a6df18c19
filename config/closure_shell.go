package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentbox/agentbox/config/pathspec"
)

// ShellCall is one simple command of a shell script as far as it is
// literal: Args[i] is "" with Literal[i] false when the word has an
// expansion, a substitution or arithmetic. Assignments (`A=b cmd`,
// `export A=b`) are in Values (literal values only). Dirs holds, for each
// argument and for each assignment to PATH, the entries it names with
// $PWD read as the script's directory (PWD="" prefix: relative), and
// whether that could be known.
type ShellCall struct {
	Args    []string
	Literal []bool
	Values  []string
	// PathDirs are the PATH entries assignments to PATH add (without
	// $PATH itself); PathUnknown is set when one could not be read.
	PathDirs    []string
	PathUnknown bool
	pwd         []pwdArg
}

type pwdArg struct {
	v  string
	ok bool
}

// argPWD is argument i read with $PWD as the script's directory.
func (c ShellCall) argPWD(i int) (string, bool) {
	if i >= len(c.pwd) || !c.pwd[i].ok || strings.Contains(c.pwd[i].v, "\x00") {
		return "", false
	}
	return c.pwd[i].v, true
}

// parseShell parses a shell script (bash syntax, what direnv and git
// hooks run), once for shellCalls and scriptGlobs.
func parseShell(src []byte) (*syntax.File, error) {
	if bytes.IndexByte(src, 0) >= 0 {
		return nil, errors.New("the script holds a NUL byte")
	}
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(src), "")
}

// parseShellCalls parses a shell script into its simple commands
// (shellCalls).
func parseShellCalls(src []byte) ([]ShellCall, error) {
	f, err := parseShell(src)
	if err != nil {
		return nil, err
	}
	return shellCalls(f), nil
}

// shellCalls lists the simple commands of a parsed script, at any nesting
// (functions, substitutions, conditionals).
func shellCalls(f *syntax.File) []ShellCall {
	var calls []ShellCall
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			var c ShellCall
			for _, a := range n.Assigns {
				c.Values = append(c.Values, assignValue(a))
				c.pathAssign(a)
			}
			for _, w := range n.Args {
				s, ok := wordLiteral(w)
				c.Args = append(c.Args, s)
				c.Literal = append(c.Literal, ok)
				p, pok := wordPWD(w)
				c.pwd = append(c.pwd, pwdArg{p, pok})
			}
			calls = append(calls, c)
		case *syntax.DeclClause:
			var c ShellCall
			for _, a := range n.Args {
				c.Values = append(c.Values, assignValue(a))
				c.pathAssign(a)
			}
			calls = append(calls, c)
		}
		return true
	})
	return calls
}

// pathAssign records the entries an assignment to PATH adds.
func (c *ShellCall) pathAssign(a *syntax.Assign) {
	if a.Name == nil || a.Name.Value != "PATH" || a.Value == nil {
		return
	}
	v, ok := wordPWD(a.Value)
	if !ok {
		c.PathUnknown = true
		return
	}
	for _, e := range strings.Split(v, ":") {
		if e != "" && e != "\x00PATH" {
			c.PathDirs = append(c.PathDirs, e)
		}
	}
}

// wordPWD is the value of a word whose only expansions are $PWD (written
// as "" so that the rest is relative to the script's directory) and
// $PATH (written as "\x00PATH"); false for any other expansion.
func wordPWD(w *syntax.Word) (string, bool) {
	var b strings.Builder
	var parts func(ps []syntax.WordPart) bool
	parts = func(ps []syntax.WordPart) bool {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				if !parts(p.Parts) {
					return false
				}
			case *syntax.ParamExp:
				if p.Param == nil || p.Exp != nil || p.Repl != nil || p.Index != nil || p.Slice != nil || p.Length || p.Excl || p.Width {
					return false
				}
				switch p.Param.Value {
				case "PWD":
					// "$PWD/bin" → "./bin" after the leading slash.
					b.WriteString(".")
				case "PATH":
					b.WriteString("\x00PATH")
				default:
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	if !parts(w.Parts) {
		return "", false
	}
	return b.String(), true
}

func assignValue(a *syntax.Assign) string {
	if a.Value == nil {
		return ""
	}
	s, _ := wordLiteral(a.Value)
	return s
}

// wordLiteral is the value of a word made only of literal parts (plain,
// single- or double-quoted text without expansions).
func wordLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(pathspec.UnescapeWord(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// shellNames protects every regular file a script's literal words or
// assignment values name, relative to dir (where the script runs).
// Directories named as arguments are what a tool works on, not what it
// runs, and stay unprotected. A script that cannot be parsed fails closed:
// the note says so (the script itself is protected as a trigger).
func (b *closureBuilder) shellNames(file string, src []byte, dir, why string) {
	f, err := parseShell(src)
	if err != nil {
		b.failClosed("%s could not be parsed as a shell script (%v): the files it runs are unknown", file, err)
		return
	}
	for _, c := range shellCalls(f) {
		for i, a := range c.Args {
			if !c.Literal[i] {
				continue
			}
			if c.runsFile(i) {
				// Run or sourced: protected before it exists, as an
				// optional local hook (`[ -x scripts/local ] &&
				// ./scripts/local`) is planted, not changed.
				if rel, ok := b.local(dir, a); ok {
					b.add(rel, why)
				}
				continue
			}
			b.addFile(dir, a, why)
		}
		for _, v := range c.Values {
			b.addFile(dir, v, why)
		}
		b.taskFiles(dir, c, why)
		b.packageRunner(file, c)
	}
	b.globs(dir, scriptGlobs(f), why)
}

// fileRunners run or source the file their first argument names.
var fileRunners = []string{".", "source", "sh", "bash", "dash", "zsh", "exec", "node", "python", "python3", "perl", "ruby"}

// runsFile reports whether the call's argument i names a file the call
// runs or sources, or one a test checks before running it: a command
// given as a path (./scripts/x), the first argument of `.`, `source` or an
// interpreter, or the operand of test/[ -f, -x, -e, -r, -s.
func (c ShellCall) runsFile(i int) bool {
	a := c.Args[i]
	if strings.HasPrefix(a, "-") || a == "]" || a == "]]" {
		return false
	}
	switch {
	case i == 0:
		return strings.Contains(a, "/")
	case i == 1 && c.Literal[0] && slices.Contains(fileRunners, path.Base(c.Args[0])):
		return true
	case c.Literal[0] && (c.Args[0] == "[" || c.Args[0] == "test" || c.Args[0] == "[["):
		return slices.Contains([]string{"-f", "-x", "-e", "-r", "-s"}, c.Args[i-1])
	}
	return false
}

// packageRunners read package.json's scripts when they run (npm test,
// npx, corepack's package managers).
var packageRunners = []string{"npm", "npx", "yarn", "pnpm", "pnpx", "bun", "bunx", "corepack"}

// packageRunner makes a hook runner present when a trigger's command runs
// a package manager: package.json's scripts are then what it runs.
func (b *closureBuilder) packageRunner(file string, c ShellCall) {
	if len(c.Args) > 0 && c.Literal[0] && slices.Contains(packageRunners, path.Base(c.Args[0])) && b.c.hooks == "" {
		b.c.hooks = fmt.Sprintf("%s runs %s, which runs package.json's scripts", file, path.Base(c.Args[0]))
	}
}

// taskRunners are programs that run what a file in the directory lists:
// a trigger that runs `make lint` runs the Makefile's recipe, as one
// that runs `npm test` runs package.json's scripts.test (judged by key,
// see judgePackageJSON).
var taskRunners = map[string][]string{
	"make":  {"GNUmakefile", "makefile", "Makefile"},
	"gmake": {"GNUmakefile", "makefile", "Makefile"},
	"just":  {"justfile", ".justfile", "Justfile"},
	"task":  {"Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"},
	"rake":  {"Rakefile", "rakefile"},
	"tox":   {"tox.ini"},
	"nox":   {"noxfile.py"},
}

// taskFiles protects the task file a call's program reads, when a
// trigger runs that program (a -f/--file option names another one).
func (b *closureBuilder) taskFiles(dir string, c ShellCall, why string) {
	if len(c.Args) == 0 || !c.Literal[0] {
		return
	}
	files, ok := taskRunners[path.Base(c.Args[0])]
	if !ok {
		return
	}
	for i := 1; i < len(c.Args); i++ {
		if (c.Args[i] == "-f" || c.Args[i] == "--file" || c.Args[i] == "--makefile" || c.Args[i] == "--justfile" || c.Args[i] == "-c") && i+1 < len(c.Args) && c.Literal[i+1] {
			files = append(files, c.Args[i+1])
		}
	}
	for _, f := range files {
		b.addFile(dir, f, fmt.Sprintf("%s (it runs %s, which reads it)", why, path.Base(c.Args[0])))
	}
}

// addFile protects name (relative to dir) when it is an existing regular
// file or a symlink inside the workspace.
func (b *closureBuilder) addFile(dir, name, why string) {
	if name == "" || strings.HasPrefix(name, "-") {
		// An option may carry a path: --config=x.
		if _, v, ok := strings.Cut(name, "="); ok && strings.HasPrefix(name, "-") {
			name = v
		} else {
			return
		}
	}
	rel, ok := b.local(dir, name)
	if !ok {
		return
	}
	fi, err := b.root.Lstat(rel)
	if err != nil || fi.IsDir() {
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if st, err := b.root.Stat(rel); err == nil && st.IsDir() {
			return
		}
	}
	b.add(rel, why)
}

// direnvLoaders are the direnv stdlib functions that load a file into the
// shell that enters the directory, with the file each loads by default
// ("" when it needs an argument).
var direnvLoaders = map[string]string{
	"source_env": "", "source_env_if_exists": "",
	"dotenv": ".env", "dotenv_if_exists": ".env",
	"source": "", ".": "",
	"watch_file": "",
}

// direnvAt adds what the .envrc at rel loads when direnv enters its
// directory: the files source_env*, source_up*, dotenv*, source and
// watch_file name (whether or not they exist yet: .envrc.local is
// typically planted, not changed), flake.nix and flake.lock for use
// flake, shell.nix and default.nix for use nix, the directories PATH_add
// and load_prefix put on PATH, and every other existing file a literal
// word names. An .envrc that cannot be parsed, or a loader with an
// argument that is not literal, fails closed: every .env* and .envrc*
// beside it and the nix files are protected.
func (b *closureBuilder) direnvAt(rel string) {
	data, err := b.read(rel)
	if err != nil {
		if !isNotExist(err) {
			b.failClosed("%s could not be read (%v)", rel, err)
			b.direnvConservative(path.Dir(rel))
		}
		return
	}
	dir := path.Dir(rel)
	why := func(what string) string {
		return fmt.Sprintf("%s %s it, and direnv runs that when a shell enters %s", rel, what, dir)
	}
	f, err := parseShell(data)
	if err != nil {
		b.failClosed("%s could not be parsed (%v): every .env* and .envrc* beside it is protected", rel, err)
		b.direnvConservative(dir)
		return
	}
	calls := shellCalls(f)
	b.globs(dir, scriptGlobs(f), why("runs or sources what this glob matches in"))
	for _, c := range calls {
		for _, v := range c.Values {
			b.addFile(dir, v, why("names"))
		}
		b.pathDirs(rel, dir, c.PathDirs, c.PathUnknown, why("puts on PATH (a program there shadows the command the person types)"))
		if len(c.Args) == 0 {
			continue
		}
		if !c.Literal[0] {
			b.failClosed("%s runs a command whose name is not literal: every .env* and .envrc* beside it is protected", rel)
			b.direnvConservative(dir)
			continue
		}
		b.taskFiles(dir, c, why("runs a program that reads"))
		b.packageRunner(rel, c)
		cmd, args, lit := c.Args[0], c.Args[1:], c.Literal[1:]
		nonLiteral := false
		for _, ok := range lit {
			nonLiteral = nonLiteral || !ok
		}
		def, loader := direnvLoaders[cmd]
		switch {
		case loader:
			if nonLiteral {
				b.failClosed("%s: %s has an argument that is not literal: every .env* and .envrc* beside it is protected", rel, cmd)
				b.direnvConservative(dir)
				continue
			}
			names := args
			if len(names) == 0 && def != "" {
				names = []string{def}
			}
			for _, n := range names {
				p, ok := b.local(dir, n)
				if !ok {
					continue
				}
				if fi, err := b.root.Stat(p); err == nil && fi.IsDir() && strings.HasPrefix(cmd, "source_env") {
					p = path.Join(p, ".envrc")
				}
				b.add(p, why("loads ("+cmd+")"))
			}
		case cmd == "source_up" || cmd == "source_up_if_exists":
			name := ".envrc"
			if len(args) > 0 {
				if nonLiteral {
					b.direnvConservative(dir)
					continue
				}
				name = args[0]
			}
			for d := dir; d != "."; {
				d = path.Dir(d)
				if p, ok := b.local(d, name); ok {
					b.add(p, why("loads ("+cmd+")"))
				}
			}
		case cmd == "use" && len(args) > 0:
			files := map[string][]string{"flake": {"flake.nix", "flake.lock"}, "nix": {"shell.nix", "default.nix"}}[args[0]]
			base := dir
			if args[0] == "flake" && len(args) > 1 && lit[1] {
				if ref, _, _ := strings.Cut(args[1], "#"); ref != "" && !strings.Contains(ref, ":") {
					if p, ok := b.local(dir, ref); ok {
						base = p
					}
				}
			}
			for _, f := range files {
				b.add(path.Join(base, f), why("evaluates (use "+args[0]+")"))
				b.nixImports(path.Join(base, f), why("evaluates (use "+args[0]+"), through nix imports,"), map[string]bool{})
			}
			for i, a := range args[1:] {
				if lit[i+1] {
					b.addFile(dir, a, why("evaluates"))
				}
			}
		case cmd == "PATH_add" || cmd == "path_add" || cmd == "load_prefix":
			for i, a := range args {
				if !lit[i] {
					if d, ok := c.argPWD(i + 1); ok {
						b.pathDirs(rel, dir, []string{d}, false, why("puts on PATH (a program there shadows the command the person types)"))
					} else {
						b.pathDirs(rel, dir, nil, true, why("puts on PATH (a program there shadows the command the person types)"))
					}
					continue
				}
				if cmd == "path_add" && i == 0 {
					continue // the variable's name
				}
				b.pathDirs(rel, dir, []string{a}, false, why("puts on PATH (a program there shadows the command the person types)"))
			}
		default:
			for i, a := range c.Args {
				if c.Literal[i] {
					b.addFile(dir, a, why("names"))
				}
			}
		}
	}
}

// direnvConservative protects what an .envrc in dir might load when it
// cannot be judged: every .env* and .envrc* there, and the nix files.
func (b *closureBuilder) direnvConservative(dir string) {
	why := fmt.Sprintf("the .envrc in %s could not be judged, so everything it might load is protected", dir)
	for _, n := range []string{".env", ".envrc.local", "flake.nix", "flake.lock", "shell.nix", "default.nix"} {
		b.add(path.Join(dir, n), why)
	}
	ents, err := b.readDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".env") {
			b.add(path.Join(dir, e.Name()), why)
		}
	}
}

// pathDirs protects the workspace directories an .envrc (at rel, in dir)
// puts on PATH; one it cannot read fails closed: every directory of dir
// named bin, sbin or scripts, and the note says so.
func (b *closureBuilder) pathDirs(rel, dir string, dirs []string, unknown bool, why string) {
	for _, d := range dirs {
		if p, ok := b.local(dir, d); ok && !slices.Contains(strings.Split(p, "/"), "node_modules") {
			// node_modules/.bin on PATH runs installed packages by name:
			// dependencies are work product (docs/protected-paths.md),
			// and the packages themselves could not be protected anyway.
			// Its entries named like a host program are (Closure.shadow).
			b.add(p, why)
		}
	}
	if unknown {
		b.failClosed("%s sets PATH from something other than $PWD and literal text: bin, sbin and scripts beside it are protected", rel)
		for _, n := range []string{"bin", "sbin", "scripts"} {
			b.add(path.Join(dir, n), why)
		}
	}
}

func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, fs.ErrNotExist)
}

// nixPath matches a nix path literal relative to the file (./x.nix,
// ../nix/shell, ./.); nix evaluates what it imports.
var nixPath = regexp.MustCompile(`(?:^|[\s(\[{=:;])(\.{1,2}/[A-Za-z0-9._/+-]*)`)

// nixImports protects the files and directories a nix file names with
// path literals (import ./nix/devshell.nix, a flake input path:./x),
// recursively: `use flake`/`use nix` evaluate them and run their
// shellHook on cd. A directory means its default.nix.
func (b *closureBuilder) nixImports(rel, why string, seen map[string]bool) {
	if seen[rel] || len(seen) > 200 {
		return
	}
	seen[rel] = true
	data, err := b.read(rel)
	if err != nil {
		return
	}
	for _, m := range nixPath.FindAllSubmatch(data, -1) {
		p, ok := b.local(path.Dir(rel), strings.TrimRight(string(m[1]), "/"))
		if !ok || p == "." || p == "" {
			continue
		}
		fi, err := b.root.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			// import ./dir evaluates dir/default.nix; a directory as a
			// derivation's src (src = ./src) is source, not protected.
			if d := path.Join(p, "default.nix"); b.exists(d) {
				b.add(d, why)
				b.nixImports(d, why, seen)
			}
			continue
		}
		b.add(p, why)
		if strings.HasSuffix(p, ".nix") {
			b.nixImports(p, why, seen)
		}
	}
}
