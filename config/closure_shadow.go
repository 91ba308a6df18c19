package config

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// PATH directories of installed dependencies.
//
// Some workspace directories end up first on the PATH of a host shell or
// hook without the person choosing to run project code: direnv's `layout
// node` and `PATH_add node_modules/.bin`, husky 9 (its runner exports
// node_modules/.bin before every hook), lint-staged (it runs commands with
// node_modules/.bin first), `layout python`/`layout ruby`/… (the layout
// directory under .direnv), and an editor that activates the project's
// virtualenv (.venv, venv) in every terminal it opens. What the
// dependencies install there is work product (docs/protected-paths.md),
// but an entry named like a program the host already has — git, ls, npm,
// sudo — shadows the command the person types or the hook runs: that is
// protected. Installing packages, which adds eslint, tsc or pytest there,
// stays unasked.

// commonCommands are names judged as host programs even when the PATH
// agentbox runs with lacks them (the person's shell may have more).
var commonCommands = []string{"git", "ls", "cd", "cat", "sh", "bash", "zsh", "env", "sudo", "su", "ssh", "scp",
	"make", "node", "npm", "npx", "yarn", "pnpm", "corepack", "python", "python3", "pip", "pip3", "go", "cargo",
	"docker", "kubectl", "code", "vim", "nvim", "less", "grep", "rm", "cp", "mv", "direnv", "claude", "codex",
	"gemini", "agentbox", "gpg", "curl"}

// shadow reports whether rel is an entry of a PATH directory of
// installed dependencies whose name is a host program.
func (c *Closure) shadow(rel string) (string, bool) {
	dir, name := path.Dir(rel), path.Base(rel)
	if !isShadowDir(dir) && !c.inShadowTarget(dir) {
		return "", false
	}
	is := c.commands
	if is == nil {
		is = hostCommand
	}
	if !is(name) || venvOwn(dir, name) {
		return "", false
	}
	return fmt.Sprintf("%s is protected: %s is put first on PATH by direnv layouts, husky and lint-staged hooks or an editor's terminal, and %q there shadows the host program the person or a hook runs by that name", rel, dir, name), true
}

// venvOwn reports whether name is one a virtualenv puts in its own bin
// directory (python, python3.11, pip, pip3): creating the environment
// writes them, and they are the project's interpreter, run on purpose.
func venvOwn(dir, name string) bool {
	if strings.HasSuffix(dir, "node_modules/.bin") || dir == "node_modules/.bin" {
		return false
	}
	return strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pip")
}

// isShadowDir reports whether dir (workspace-relative) is, by its name, a
// PATH directory of installed dependencies: node_modules/.bin, the bin
// directory of a virtualenv (.venv/bin, venv/bin) or anything named bin
// below a direnv layout directory (.direnv/python-3.11/bin).
func isShadowDir(dir string) bool {
	parts := strings.Split(dir, "/")
	n := len(parts)
	switch {
	case n >= 2 && parts[n-1] == ".bin" && parts[n-2] == "node_modules":
		return true
	case n >= 2 && parts[n-1] == "bin" && (parts[n-2] == ".venv" || parts[n-2] == "venv"):
		return true
	case parts[n-1] == "bin" && slices.Contains(parts[:n-1], ".direnv"):
		return true
	}
	return false
}

// isShadowLink reports whether a symlink at rel may redirect a PATH
// directory of installed dependencies: it is one, or a directory on the
// way (node_modules, .venv, venv, .direnv and what lies below it).
func isShadowLink(rel string) bool {
	if isShadowDir(rel) {
		return true
	}
	parts := strings.Split(rel, "/")
	switch parts[len(parts)-1] {
	case "node_modules", ".venv", "venv", ".direnv":
		return true
	}
	return slices.Contains(parts[:len(parts)-1], ".direnv")
}

// inShadowTarget reports whether dir is where a symlinked PATH directory
// of installed dependencies resolves.
func (c *Closure) inShadowTarget(dir string) bool {
	return c.shadowDirs[dir]
}

// resolveShadowLinks records where the symlinks on the way to a PATH
// directory of installed dependencies lead (node_modules -> x makes x/.bin
// one), so the shadowing rule judges what the host follows.
func (b *closureBuilder) resolveShadowLinks() {
	// The walk does not enter node_modules or virtualenvs: look at the
	// PATH directories at the root of the workspace by name.
	for _, l := range []string{"node_modules/.bin", ".venv/bin", "venv/bin"} {
		if fi, err := b.root.Lstat(l); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !slices.Contains(b.shadowLinks, l) {
			b.shadowLinks = append(b.shadowLinks, l)
		}
	}
	for _, l := range b.shadowLinks {
		target, _, ok := b.resolve(l)
		if !ok || target == l {
			continue
		}
		if b.c.shadowDirs == nil {
			b.c.shadowDirs = map[string]bool{}
		}
		switch base := path.Base(l); {
		case isShadowDir(l):
			b.c.shadowDirs[target] = true
		case base == "node_modules":
			b.c.shadowDirs[path.Join(target, ".bin")] = true
		case base == ".venv" || base == "venv":
			b.c.shadowDirs[path.Join(target, "bin")] = true
		default:
			// .direnv or a directory below it: every bin beneath the
			// target is judged; list the ones present.
			b.shadowBins(target, 0)
		}
	}
}

// shadowBins records every directory named bin beneath dir (a few levels).
func (b *closureBuilder) shadowBins(dir string, depth int) {
	if depth > 4 {
		return
	}
	if path.Base(dir) == "bin" {
		b.c.shadowDirs[dir] = true
	}
	ents, err := b.readDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			b.shadowBins(path.Join(dir, e.Name()), depth+1)
		}
	}
}

// systemBinDirs are where the host's packaged programs live. Directories
// like /usr/local/bin or ~/.npm-global/bin are left out on purpose: a
// globally installed eslint or prettier is also what npm install puts in
// node_modules/.bin, and that must stay unasked.
var systemBinDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}

var hostCommands = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, dir := range systemBinDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			set[e.Name()] = true
		}
	}
	return set
})

// hostCommand reports whether name is a program of the host's system
// directories (systemBinDirs) or one of commonCommands.
func hostCommand(name string) bool {
	return slices.Contains(commonCommands, name) || hostCommands()[name]
}
