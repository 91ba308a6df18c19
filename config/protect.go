package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultProtectedPaths are the workspace paths whose content makes a
// program on the host run something the next time a person opens the
// project, enters its directory or starts an agent in it — without the
// person deliberately running project code. Git's own metadata is always
// protected on top of this list (see Protection.Match).
//
// Why each is here:
//   - .gitmodules: submodule URLs and paths git acts on in checkout/status.
//   - .vscode .idea .fleet .zed .devcontainer: editor tasks, settings that
//     name interpreters and tools, dev containers (run on open).
//   - .envrc .mise.toml mise.toml .mise .tool-versions: direnv and mise
//     run or load them when a shell enters the directory.
//   - .npmrc .yarnrc .yarnrc.yml: package-manager settings naming scripts,
//     shells and registries with tokens.
//   - .bashrc .bash_profile .bash_login .bash_logout .profile .zshrc
//     .zshenv .zprofile .zlogin .zlogout .gitconfig .inputrc: shell and git
//     rc files (the workspace may be someone's home directory).
//   - .exrc .vimrc .gvimrc .nvimrc .nvim.lua .lazy.lua .dir-locals.el
//     .dir-locals-2.el: vim/neovim exrc and Emacs directory-local code.
//   - .hg: Mercurial's repository config (.hg/hgrc hooks run on hg status).
//   - .claude .gemini .codex .cursor .continue .windsurf .mcp.json
//     .aider.conf.yml .agentbox: agent and MCP configuration (hooks, MCP
//     servers, commands an agent runs on start; agentbox's own policy).
//   - .roo .kilocode .kiro .amazonq: the project MCP servers of Roo Code,
//     Kilo Code, Kiro and Amazon Q (.roo/mcp.json is loaded on its own);
//     .opencode opencode.json opencode.jsonc: opencode's project plugins
//     (.opencode/plugins/*.js load at start) and MCP servers;
//     .crush.json crush.json: Crush's MCP servers.
//   - .husky .githooks .pre-commit-config.yaml: hooks directories that a
//     repository's core.hooksPath or pre-commit runs on host git commands.
//   - .cargo/config.toml .cargo/config (at any depth: cargo reads every
//     parent's): rustc wrappers and runners that an editor's
//     rust-analyzer runs on open.
//   - .ripgreprc: options for rg, including --pre (a preprocessor program).
//   - lefthook.yml .lefthook.yml lefthook-local.yml .lefthook … (every
//     name lefthook reads) and .lefthook/ .lefthook-local/ (its script
//     directories): lefthook runs them on git commit/checkout/merge.
//   - .huskyrc* .lintstagedrc* lint-staged.config.* .commitlintrc*
//     commitlint.config.* .simple-git-hooks* simple-git-hooks.*: the
//     configs of the npm hook managers and of the tools their hooks run.
//   - mise.local.toml .mise.local.toml mise.*.toml .config/mise.toml
//     .config/mise: more names mise loads on entering the directory.
//   - .aws/config .aws/credentials (credential_process), .ssh
//     (ProxyCommand, LocalCommand, rc, authorized_keys command=),
//     .docker/config.json (credsStore, credHelpers), .kube/config (exec
//     plugins), .gnupg (gpg-agent.conf names pinentry-program), .agents
//     (agent skills and hooks), .asdf (asdf plugins and asdfrc),
//     .config/git .config/fish .config/systemd .config/autostart
//     .config/environment.d .config/direnv .config/nvim .local/bin
//     .local/share/direnv (direnv's allow list) .local/share/mise
//     .cache/pre-commit (the hook repositories pre-commit runs)
//     .pam_environment .config/husky (husky 9 sources init.sh before
//     every hook) .local/lib (Python runs usercustomize and the import
//     lines of .pth files at every start) .local/share/nvim .vim .emacs
//     .emacs.d (editor plugins) .cargo/bin (on PATH) .xinitrc .xprofile
//     .xsession .xsessionrc .tmux.conf .config/tmux (run-shell) .gdbinit:
//     home-directory configs a host program runs or loads (the workspace
//     may be someone's home directory).
//
// What a present trigger runs or loads (the files a hook, .envrc or hook
// manager names, core.hooksPath, the hook-relevant keys of package.json,
// the target of a protected name that is a symlink) is protected on top,
// computed from the workspace at the moment of use: see Closure and
// docs/protected-paths.md for the table and where the line is.
var DefaultProtectedPaths = []string{
	".gitmodules",
	".vscode", ".idea", ".fleet", ".zed", ".devcontainer",
	".envrc", ".mise.toml", "mise.toml", ".mise", ".tool-versions",
	".npmrc", ".yarnrc", ".yarnrc.yml",
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".gitconfig", ".inputrc",
	".exrc", ".vimrc", ".gvimrc", ".nvimrc", ".nvim.lua", ".lazy.lua", ".dir-locals.el", ".dir-locals-2.el",
	".hg",
	".claude", ".gemini", ".codex", ".cursor", ".continue", ".windsurf", ".mcp.json",
	".aider.conf.yml", ".agentbox",
	".roo", ".kilocode", ".kiro", ".amazonq", ".opencode", "opencode.json", "opencode.jsonc", ".crush.json", "crush.json",
	".husky", ".githooks", ".pre-commit-config.yaml",
	".cargo/config.toml", ".cargo/config", "**/.cargo/config.toml", "**/.cargo/config",
	".ripgreprc",
	"lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.jsonc", "lefthook.toml",
	".lefthook.yml", ".lefthook.yaml", ".lefthook.json", ".lefthook.jsonc", ".lefthook.toml",
	"lefthook-local.yml", "lefthook-local.yaml", "lefthook-local.json", "lefthook-local.jsonc", "lefthook-local.toml",
	".lefthook-local.yml", ".lefthook-local.yaml", ".lefthook-local.json", ".lefthook-local.jsonc", ".lefthook-local.toml",
	".config/lefthook.yml", ".config/lefthook.yaml", ".config/lefthook-local.yml", ".config/lefthook-local.yaml",
	".lefthook", ".lefthook-local",
	".huskyrc*", ".lintstagedrc*", "lint-staged.config.*", ".commitlintrc*", "commitlint.config.*",
	".simple-git-hooks*", "simple-git-hooks.*",
	"mise.local.toml", ".mise.local.toml", "mise.*.toml", ".mise.*.toml", ".config/mise.toml", ".config/mise",
	".aws/config", ".aws/credentials", ".ssh", ".docker/config.json", ".kube/config", ".gnupg", ".agents", ".asdf",
	".config/git", ".config/fish", ".config/systemd", ".config/autostart", ".config/environment.d",
	".config/direnv", ".config/nvim", ".local/bin", ".local/share/direnv", ".local/share/mise", ".cache/pre-commit",
	".pam_environment", ".config/husky", ".local/lib", ".local/share/nvim", ".cargo/bin",
	".xinitrc", ".xprofile", ".xsession", ".xsessionrc", ".tmux.conf", ".config/tmux", ".gdbinit",
	".vim", ".emacs", ".emacs.d",
}

// GitBehaviourFiles are the entries of a git directory that decide what
// git executes or where it reads such settings from: config, hooks,
// includes, alternates and the pointers to other git directories.
// Objects, refs, the index and logs are data and stay writable.
//
// Of objects/info only the alternates files are: the rest (packs,
// commit-graph) is maintenance data git gc must be able to write.
var GitBehaviourFiles = []string{"config", "config.worktree", "commondir", "gitdir", "hooks", "info",
	"objects/info/alternates", "objects/info/http-alternates", "modules", "worktrees"}

// gitStateDirs are the entries of a git directory that hold a
// half-done operation whose continuation runs commands: the todo lists
// of rebase and of cherry-pick/revert (an exec line runs a shell command
// at the owner's git rebase --continue) and the merge strategy they name
// (git runs git-merge-<strategy>). They are judged by content (see
// judgeGitState): a rebase or cherry-pick stopped on a conflict in the
// sandbox leaves its state here, and that must stay.
var gitStateDirs = []string{"rebase-merge", "rebase-apply", "sequencer"}

// Protection decides which workspace paths are protected. It is built
// from sandbox.protected_paths; its zero value protects git metadata
// only. Safe for concurrent use.
type Protection struct {
	patterns []string
}

// Protection returns the matcher for the section's protected paths.
func (c *Sandbox) Protection() Protection {
	return Protection{patterns: append([]string(nil), c.ProtectedPaths...)}
}

// Patterns returns the configured patterns.
func (p Protection) Patterns() []string { return append([]string(nil), p.patterns...) }

// Match reports whether the workspace-relative, slash-separated path rel
// is protected and, if so, a sentence saying why. A pattern without a
// slash matches that name at any depth; one with a slash matches relative
// to the workspace root; both cover everything beneath a matched
// directory; `*`, `?`, `[...]` and `**` work as in gitignore.
//
// Git metadata is always protected: in any directory named .git the
// entries GitBehaviourFiles names (everything under modules/ and
// worktrees/); a .git entry itself (a new repository, a gitdir pointer
// file); and in any other directory isGitDir reports as git-like (it has
// a HEAD, objects or refs entry: a bare repository an agent may be
// assembling) those entries too. isGitDir may be nil.
func (p Protection) Match(rel string, isGitDir func(dir string) bool) (string, bool) {
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if rel == "" {
		return "", false
	}
	if why, ok := matchGit(rel, isGitDir); ok {
		return why, true
	}
	parts := strings.Split(rel, "/") // once: Match runs for every changed path of a call
	for _, pat := range p.patterns {
		if matchPattern(pat, rel, parts) {
			return fmt.Sprintf("%s is protected (sandbox.protected_paths: %s): a host program may run what it says", rel, pat), true
		}
	}
	return "", false
}

// matchPattern applies one protected_paths pattern to rel, whose
// components are parts.
func matchPattern(pat, rel string, parts []string) bool {
	pat = strings.TrimSuffix(pat, "/")
	anchored := strings.Contains(strings.TrimPrefix(pat, "/"), "/") || strings.HasPrefix(pat, "/")
	pat = strings.TrimPrefix(pat, "/")
	if anchored {
		n := strings.Count(pat, "/") + 1
		if strings.Contains(pat, "**") {
			// Try every prefix of rel.
			for i := 1; i <= len(parts); i++ {
				if ok, _ := doublestar.Match(pat, strings.Join(parts[:i], "/")); ok {
					return true
				}
			}
			return false
		}
		if len(parts) < n {
			return false
		}
		ok, _ := doublestar.Match(pat, strings.Join(parts[:n], "/"))
		return ok
	}
	if !strings.ContainsAny(pat, `*?[\`) {
		// A plain name (most of them): path.Match would compare it.
		return slices.Contains(parts, pat)
	}
	for _, part := range parts {
		if ok, _ := path.Match(pat, part); ok {
			return true
		}
	}
	return false
}

// matchGit is the built-in rule for git metadata.
func matchGit(rel string, isGitDir func(string) bool) (string, bool) {
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if part == ".git" && i == len(parts)-1 {
			return rel + " is git metadata (a repository or a pointer to one)", true
		}
		rest := parts[i+1:]
		dir := strings.Join(parts[:i+1], "/")
		if part == ".git" {
			if gitBehaviour(rest) {
				return fmt.Sprintf("%s is git metadata that decides what git runs (%s)", rel, dir), true
			}
			continue
		}
		if slices.Contains(parts[:i], ".git") {
			// Below a .git directory git's own state is judged by the
			// .git rules above: .git/logs holds HEAD and refs like a
			// repository, yet a reflog runs nothing.
			continue
		}
		// Any other directory that looks like a git directory (a bare
		// repository git would use when someone runs it there): its
		// behaviour files and the entries that make it a repository
		// (HEAD, objects, refs), so that one cannot be assembled piece
		// by piece either.
		if len(rest) > 0 && (gitBehaviour(rest) || rest[0] == "HEAD" || rest[0] == "objects" || rest[0] == "refs") &&
			isGitDir != nil && isGitDir(dir) {
			return fmt.Sprintf("%s makes or changes a git repository in %s that git would use there", rel, dir), true
		}
	}
	return "", false
}

// gitBehaviour reports whether rest, the components below a git
// directory, names one of GitBehaviourFiles or lies beneath one.
func gitBehaviour(rest []string) bool {
	if len(rest) == 0 {
		return false
	}
	switch rest[0] {
	case "config", "config.worktree", "commondir", "gitdir", "hooks", "info", "modules", "worktrees":
		return true
	case "objects":
		return len(rest) > 2 && rest[1] == "info" && (rest[2] == "alternates" || rest[2] == "http-alternates")
	}
	return false
}
