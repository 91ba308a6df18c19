package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// git adds what the repository at the workspace root runs on the owner's
// git commands (gitAt); the walk adds nested repositories the same way.
func (b *closureBuilder) git() { b.gitAt(".") }

// gitAt adds what the repository whose working tree is top runs on the
// owner's git commands: the hooks directory core.hooksPath names
// (wherever it points inside the workspace), the files its config
// includes, and what the active hooks name.
func (b *closureBuilder) gitAt(top string) {
	gitDir := b.gitDir(top)
	var hookDirs []string
	if gitDir != "" {
		hookDirs = append(hookDirs, path.Join(gitDir, "hooks"))
		seen := map[string]bool{}
		hookDirs = append(hookDirs, b.gitConfig(path.Join(gitDir, "config"), top, seen)...)
		// extensions.worktreeConfig: the worktree's own config may set
		// core.hooksPath too (read whether or not the extension is on:
		// reading more fails closed).
		hookDirs = append(hookDirs, b.gitConfig(path.Join(gitDir, "config.worktree"), top, seen)...)
	}
	// Hook directories a hook manager installs and a core.hooksPath set
	// elsewhere (the owner's global config) may name.
	hookDirs = append(hookDirs, path.Join(top, ".husky"), path.Join(top, ".githooks"))
	for _, hp := range b.global {
		if strings.HasPrefix(hp, "~") || (path.IsAbs(hp) && !b.inside(hp)) {
			// The owner's own hooks, outside: they may run package
			// scripts (fail closed).
			if b.c.hooks == "" {
				b.c.hooks = fmt.Sprintf("the owner's git config sets core.hooksPath %s, whose hooks may run package scripts", hp)
			}
			continue
		}
		if dir, ok := b.local(top, hp); ok {
			b.add(dir, fmt.Sprintf("core.hooksPath %s in the owner's git config points at it: git runs its hooks on commit, checkout, merge and rebase", hp))
			hookDirs = append(hookDirs, dir)
		}
	}
	for _, dir := range hookDirs {
		b.hookDir(dir, top)
	}
}

// gitDir is the workspace-relative git directory of the repository whose
// working tree is top: top/.git, or where a .git pointer file leads
// inside the workspace; "" when there is none (or it lies outside).
func (b *closureBuilder) gitDir(top string) string {
	dotgit := path.Join(top, ".git")
	fi, err := b.root.Lstat(dotgit)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		return dotgit
	}
	data, err := b.read(dotgit)
	if err != nil {
		return ""
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	rel, ok := b.local(top, strings.TrimSpace(target))
	if !ok {
		// A linked worktree or a submodule: the git directory, and the
		// hooks it runs on commit, lie outside the workspace where the
		// closure cannot look. Fail closed: judge package.json's
		// hook-run keys as if a hook ran them.
		b.failClosed("%s points at a git directory outside the workspace: its hooks cannot be seen, so package.json's scripts are judged as if a hook ran them", dotgit)
		if b.c.hooks == "" {
			b.c.hooks = fmt.Sprintf("%s points at a git directory outside the workspace whose hooks cannot be seen", dotgit)
		}
		return ""
	}
	return rel
}

// gitConfig reads one git config file: core.hooksPath (returned, as a
// workspace-relative directory, when inside the workspace) and the files
// it includes (protected: they may set anything config can, and read
// too). A config that cannot be parsed fails closed: .githooks and .husky
// are judged as hook directories anyway; the note says so.
func (b *closureBuilder) gitConfig(rel, top string, seen map[string]bool) []string {
	if seen[rel] || len(seen) > 10 {
		return nil
	}
	seen[rel] = true
	data, err := b.read(rel)
	if err != nil {
		if !isNotExist(err) {
			b.failClosed("%s could not be read (%v): core.hooksPath and includes are unknown", rel, err)
		}
		return nil
	}
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		b.failClosed("%s could not be parsed (%v): core.hooksPath and includes are unknown", rel, err)
		b.c.hooks = "a git config that could not be parsed may set hooks"
		return nil
	}
	var dirs []string
	for _, s := range cfg.Sections {
		switch {
		case s.IsName("core"):
			for _, hp := range s.OptionAll("hooksPath") {
				// Relative to where hooks run: the working tree's top.
				if dir, ok := b.local(top, hp); ok {
					b.add(dir, fmt.Sprintf("core.hooksPath in %s points at it: git runs its hooks on commit, checkout, merge and rebase", rel))
					dirs = append(dirs, dir)
				}
			}
		case s.IsName("include") || s.IsName("includeIf"):
			opts := s.OptionAll("path")
			for _, sub := range s.Subsections {
				opts = append(opts, sub.OptionAll("path")...)
			}
			for _, inc := range opts {
				// Relative to the including file's directory.
				if p, ok := b.local(path.Dir(rel), inc); ok {
					b.add(p, fmt.Sprintf("%s includes it: it is git configuration", rel))
					dirs = append(dirs, b.gitConfig(p, top, seen)...)
				}
			}
		}
	}
	return dirs
}

// hookDir judges one hooks directory of the working tree top: every hook in it that is active
// (not a .sample) makes a hook runner present; what a hook names inside
// the workspace (a script, a symlink's target) is protected.
func (b *closureBuilder) hookDir(dir, top string) {
	ents, err := b.readDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".sample") {
			continue
		}
		p := path.Join(dir, name)
		if e.IsDir() {
			// husky 9 keeps its runner in .husky/_ and the hooks one up.
			b.hookDir(p, top)
			continue
		}
		if b.c.hooks == "" {
			b.c.hooks = fmt.Sprintf("the git hook %s is present and may run package scripts", p)
		}
		if e.Type()&fs.ModeSymlink != 0 {
			b.links = append(b.links, p)
		}
		data, err := b.read(p)
		if err != nil {
			continue // a dangling link: its target (resolveLinks) is what matters
		}
		// Hooks run at the top of the working tree.
		b.shellNames(p, data, top, fmt.Sprintf("the git hook %s names it", p))
	}
}

// isGitState reports whether rel lies in a half-done operation's state
// directory of a git directory (see gitStateDirs).
func isGitState(rel string) bool {
	parts := strings.Split(rel, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == ".git" && slices.Contains(gitStateDirs, parts[i+1]) {
			return true
		}
	}
	return false
}

// builtinStrategies are the merge strategies built into git; any other
// name makes git run git-merge-<name>.
var builtinStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// judgeGitState judges the new content of a file in a git directory's
// rebase-merge, rebase-apply or sequencer directory: a todo list with an
// exec line (git rebase --continue runs it with the shell) or a merge
// strategy that is not built in (git runs git-merge-<name>) is protected.
// Everything else there — the done list, the author script, messages,
// patches — runs nothing, and a deleted file runs nothing.
func judgeGitState(rel string, content []byte) (string, bool) {
	if content == nil {
		return "", false
	}
	base := path.Base(rel)
	switch {
	case strings.HasPrefix(base, "git-rebase-todo") || base == "todo" || base == "done":
		sc := bufio.NewScanner(bytes.NewReader(content))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 0 && (f[0] == "exec" || f[0] == "x") {
				return fmt.Sprintf("%s is a todo list with an exec line: the owner's git rebase --continue would run it", rel), true
			}
		}
		if sc.Err() != nil {
			return fmt.Sprintf("%s is a todo list that could not be read line by line", rel), true
		}
	case base == "strategy":
		if s := strings.TrimSpace(string(content)); s != "" && !slices.Contains(builtinStrategies, s) {
			return fmt.Sprintf("%s names the merge strategy %q: git would run git-merge-%s", rel, s, s), true
		}
	case base == "opts":
		cfg := gitconfig.New()
		if err := gitconfig.NewDecoder(bytes.NewReader(content)).Decode(cfg); err != nil {
			return fmt.Sprintf("%s (the sequencer's options) could not be parsed", rel), true
		}
		for _, s := range cfg.Sections {
			for _, v := range s.OptionAll("strategy") {
				if !slices.Contains(builtinStrategies, strings.TrimSpace(v)) {
					return fmt.Sprintf("%s names the merge strategy %q: git would run git-merge-%s", rel, v, v), true
				}
			}
		}
	}
	return "", false
}

// inside reports whether the absolute path p lies in the workspace.
func (b *closureBuilder) inside(p string) bool {
	_, ok := b.local(".", p)
	return ok
}

// ownerGitConfigs lists the git config files outside any workspace whose
// core.hooksPath applies to every repository of the owner: the system
// config, ~/.gitconfig and the XDG one.
func ownerGitConfigs() []string {
	out := []string{"/etc/gitconfig"}
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, ".gitconfig"))
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	return out
}

// globalHooksPaths reads core.hooksPath from the owner's git config files
// (the last one set wins in git; all are judged here). A file that cannot
// be read as a regular file is skipped: it is the owner's, not the
// agent's — unless the workspace is the home directory, where the agent
// may have put a FIFO or a link to /dev/zero there (readOwnerFile).
func globalHooksPaths(files []string) []string {
	var out []string
	for _, f := range files {
		data, err := readOwnerFile(f)
		if err != nil {
			continue
		}
		cfg := gitconfig.New()
		if gitconfig.NewDecoder(bytes.NewReader(data)).Decode(cfg) != nil {
			continue
		}
		for _, s := range cfg.Sections {
			if s.IsName("core") {
				out = append(out, s.OptionAll("hooksPath")...)
			}
		}
	}
	return out
}

// readOwnerFile reads the regular file p, at most maxTriggerBytes, opened
// non-blocking: a FIFO or a device found there (a link the agent made
// when the workspace holds p) neither hangs nor floods the read.
func readOwnerFile(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTriggerBytes+1))
	if err == nil && len(data) > maxTriggerBytes {
		err = fmt.Errorf("%s is larger than %d bytes", p, maxTriggerBytes)
	}
	return data, err
}
