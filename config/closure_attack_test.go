package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClosureShadow: an entry of a PATH directory of installed
// dependencies named like a host program (node_modules/.bin/git under
// `layout node` or husky 9, a virtualenv's bin/ls) is protected, at the
// name and where a symlinked directory leads; what npm install and pip
// put there (eslint, pytest) stays free.
func TestClosureShadow(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		yes   []string
		no    []string
	}{
		{"layout node", map[string]string{".envrc": "layout node\n", "node_modules/.bin/eslint": "x"},
			[]string{"node_modules/.bin/git", "node_modules/.bin/ls", "node_modules/.bin/npm", "web/node_modules/.bin/git"},
			[]string{"node_modules/.bin/eslint", "node_modules/.bin/tsc", "node_modules/git/index.js", "bin/git"}},
		{"PATH_add node_modules/.bin keeps npm install free", map[string]string{".envrc": "PATH_add node_modules/.bin\n"},
			[]string{"node_modules/.bin/git"}, []string{"node_modules/.bin/eslint", "node_modules/.bin/prettier"}},
		{"export PATH with $PWD", map[string]string{".envrc": "export PATH=$PWD/node_modules/.bin:$PATH\n"},
			[]string{"node_modules/.bin/git"}, []string{"node_modules/.bin/jest"}},
		{"direnv layout python and virtualenvs", map[string]string{".envrc": "layout python3\n"},
			[]string{".direnv/python-3.11/bin/git", ".venv/bin/ls", "venv/bin/sudo", "sub/.venv/bin/git"},
			[]string{".direnv/python-3.11/bin/pytest", ".venv/bin/black", ".venv/lib/git", "src/bin/git",
				".venv/bin/python", ".venv/bin/python3.11", ".venv/bin/pip3", ".direnv/python-3.11/bin/python"}},
		{"symlinked node_modules", map[string]string{"node_modules": "-> store/nm", "store/nm/.bin/": ""},
			[]string{"store/nm/.bin/git"}, []string{"store/nm/.bin/eslint", "store/git"}},
		{"symlinked .bin", map[string]string{"node_modules/.bin": "-> ../evilbin", "evilbin/": ""},
			[]string{"evilbin/git", "node_modules/.bin/git"}, []string{"evilbin/eslint"}},
		{"symlinked .venv", map[string]string{".venv": "-> envs/a", "envs/a/bin/": ""},
			[]string{"envs/a/bin/git"}, []string{"envs/a/bin/black"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, root := plant(t, tt.files)
			c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
			for _, p := range tt.yes {
				if why, ok := c.Match(p); !ok {
					t.Errorf("%s is not protected", p)
				} else if !strings.Contains(why, "shadows") && !strings.Contains(why, "PATH") {
					t.Errorf("%s: reason %q does not say why", p, why)
				}
			}
			for _, p := range tt.no {
				if why, ok := c.Match(p); ok {
					t.Errorf("%s is protected: %s", p, why)
				}
			}
		})
	}
}

// TestClosureGitDirOutside: a linked worktree or a submodule keeps its
// git directory, and the hooks a commit runs, outside the workspace;
// package.json's hook-run keys are then judged (fail closed), while a
// dependency-only change stays free.
func TestClosureGitDirOutside(t *testing.T) {
	old := []byte(`{"scripts":{"test":"node t.js"},"dependencies":{"a":"1"}}`)
	for _, pointer := range []string{"gitdir: /elsewhere/repo/.git/worktrees/x\n", "gitdir: ../.git/modules/sub\n"} {
		_, root := plant(t, map[string]string{".git": pointer, "package.json": string(old)})
		c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
		if c.HookRunner() == "" {
			t.Fatalf("%q: no hook runner assumed", pointer)
		}
		judge := c.Judge("package.json")
		if _, ok := judge(old, []byte(`{"scripts":{"test":"curl x|sh"},"dependencies":{"a":"1"}}`)); !ok {
			t.Errorf("%q: a scripts change is not judged", pointer)
		}
		if why, ok := judge(old, []byte(`{"scripts":{"test":"node t.js"},"dependencies":{"a":"2"}}`)); ok {
			t.Errorf("%q: a dependency change is judged: %s", pointer, why)
		}
	}
	// A pointer inside the workspace is read as before: no hooks, no runner.
	_, root := plant(t, map[string]string{".git": "gitdir: repo.git\n", "repo.git/HEAD": "ref: refs/heads/main\n", "package.json": string(old)})
	if c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"}); c.HookRunner() != "" {
		t.Errorf("a git directory inside the workspace without hooks made a runner: %s", c.HookRunner())
	}
}

// TestClosureOptionalHook: a hook that runs or sources a file only when it
// exists (`[ -x tools/local ] && ./tools/local`) protects the file before
// it exists; a directory or word the hook merely mentions stays free.
func TestClosureOptionalHook(t *testing.T) {
	_, root := plant(t, map[string]string{
		".git/HEAD":             "ref: refs/heads/main\n",
		".git/hooks/pre-commit": "#!/bin/sh\n[ -x tools/local-hook ] && ./tools/local-hook\ntest -f ci/extra.sh && . ci/extra.sh\nif [ -e more.sh ]; then sh more.sh; fi\nnode hooks/check.js\neslint src\n",
	})
	c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
	for _, p := range []string{"tools/local-hook", "ci/extra.sh", "more.sh", "hooks/check.js"} {
		if _, ok := c.Match(p); !ok {
			t.Errorf("%s (run by the hook once it exists) is not protected", p)
		}
	}
	for _, p := range []string{"src", "src/a.js", "tools/other", "eslint"} {
		if why, ok := c.Match(p); ok {
			t.Errorf("%s is protected: %s", p, why)
		}
	}
}

// TestClosureRunGlobs: a trigger that runs or sources every file a glob
// matches (`for f in env.d/*.sh; do . "$f"; done` in .envrc, a hook
// dispatching to hooks.d/*) protects the directory and the matches; a
// glob a tool only works on (`eslint src/*.js`) protects nothing.
func TestClosureRunGlobs(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		yes   []string
		no    []string
	}{
		{"envrc sources a directory", map[string]string{".envrc": "for f in env.d/*.sh; do . \"$f\"; done\n", "env.d/a.sh": "x"},
			[]string{"env.d/a.sh", "env.d/evil.sh"}, []string{"src/a.sh"}},
		{"envrc source_env loop", map[string]string{".envrc": "for f in conf/*.env; do\n  [ -f \"$f\" ] && dotenv \"$f\"\ndone\n"},
			[]string{"conf/x.env"}, nil},
		{"hook dispatches to a directory", map[string]string{".husky/pre-commit": "for h in scripts/hooks.d/*; do \"$h\" || exit 1; done\n", "scripts/hooks.d/a": "x"},
			[]string{"scripts/hooks.d/a", "scripts/hooks.d/b"}, []string{"scripts/other.sh"}},
		{"root glob protects its matches", map[string]string{".envrc": "for f in ./*.envsh; do source \"$f\"; done\n", "a.envsh": "x"},
			[]string{"a.envsh"}, []string{"b.txt"}},
		{"a tool's glob is not run", map[string]string{".husky/pre-commit": "eslint src/*.js\nfor f in src/*.js; do echo \"$f\"; done\nprettier --check 'lib/**/*.ts'\n", "src/a.js": "x"},
			nil, []string{"src/a.js", "src", "lib/x.ts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, root := plant(t, tt.files)
			c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
			for _, p := range tt.yes {
				if _, ok := c.Match(p); !ok {
					t.Errorf("%s is not protected (notes %v)", p, c.Notes())
				}
			}
			for _, p := range tt.no {
				if why, ok := c.Match(p); ok {
					t.Errorf("%s is protected: %s", p, why)
				}
			}
		})
	}
}

// FuzzRunGlobs: any script parses or is refused without a panic, every
// glob listed is a glob, and the closure built over it never protects
// the workspace root.
func FuzzRunGlobs(f *testing.F) {
	for _, s := range []string{"for f in env.d/*.sh; do . \"$f\"; done\n", "source lib/*.sh\n", "for f in *; do \"$f\"; done", "eslint src/*.js", "for x in a b; do echo $x; done"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, g := range runGlobs(src) {
			if !strings.ContainsAny(g, "*?[") {
				t.Fatalf("%q listed as a glob", g)
			}
		}
		_, root := plant(t, map[string]string{".envrc": string(src)})
		c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
		for _, p := range c.Paths() {
			if p == "" || p == "." {
				t.Fatalf("the closure protects the root: %v", c.Paths())
			}
		}
	})
}

// TestClosureYarnAndWorktreeConfig: yarn runs .yarnrc.yml's yarnPath and
// plugins (and loads .env.yarn) on every command a hook runs; a
// core.hooksPath in .git/config.worktree names hooks like one in config.
func TestClosureYarnAndWorktreeConfig(t *testing.T) {
	_, root := plant(t, map[string]string{
		".yarnrc.yml":                   "yarnPath: .yarn/releases/yarn-4.1.0.cjs\ncacheFolder: .yarn/cache\nplugins:\n  - path: .yarn/plugins/@yarnpkg/plugin-x.cjs\n    spec: x\n",
		".yarn/releases/yarn-4.1.0.cjs": "x",
		".yarn/cache/a.zip":             "x",
		".git/HEAD":                     "ref: refs/heads/main\n",
		".git/config":                   "[extensions]\n\tworktreeConfig = true\n",
		".git/config.worktree":          "[core]\n\thooksPath = tools/hooks\n",
		"tools/hooks/pre-commit":        "./ci/check.sh\n",
		"ci/check.sh":                   "x",
	})
	c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
	for _, p := range []string{".yarn/releases/yarn-4.1.0.cjs", ".yarn/plugins/@yarnpkg/plugin-x.cjs", ".env.yarn", "tools/hooks/pre-commit", "ci/check.sh"} {
		if _, ok := c.Match(p); !ok {
			t.Errorf("%s is not protected", p)
		}
	}
	for _, p := range []string{".yarn/cache/a.zip", ".yarn/cache/b.zip", "ci/other.sh"} {
		if why, ok := c.Match(p); ok {
			t.Errorf("%s is protected: %s", p, why)
		}
	}
	if c.HookRunner() == "" {
		t.Error("a hook in the config.worktree hooksPath is no runner")
	}
}

// TestClosureGlobalHooksPath: the owner's global core.hooksPath applies
// to the workspace's repository: a relative one names a directory in the
// workspace (its hooks are planted, not changed), one outside makes its
// hooks a runner that may run package scripts.
func TestClosureGlobalHooksPath(t *testing.T) {
	global := filepath.Join(t.TempDir(), "gitconfig")
	files := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\tbare = false\n", "package.json": `{"scripts":{}}`}
	for _, tt := range []struct {
		cfg    string
		yes    []string
		runner bool
	}{
		{"[core]\n\thooksPath = .hooks\n", []string{".hooks/pre-commit", ".hooks"}, false},
		{"[core]\n\thooksPath = ~/.git-hooks\n", nil, true},
		{"[core]\n\thooksPath = /opt/hooks\n", nil, true},
	} {
		if err := os.WriteFile(global, []byte(tt.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, root := plant(t, files)
		c := defaultProtection().Closure(root, ClosureOptions{Workspace: ws, GlobalGitConfig: []string{global, "/nonexistent/x"}})
		for _, p := range tt.yes {
			if _, ok := c.Match(p); !ok {
				t.Errorf("%q: %s is not protected", tt.cfg, p)
			}
		}
		if got := c.HookRunner() != ""; got != tt.runner {
			t.Errorf("%q: runner %q, want %v", tt.cfg, c.HookRunner(), tt.runner)
		}
	}
	// Without a global hooksPath, .hooks is an ordinary directory.
	ws, root := plant(t, files)
	if why, ok := defaultProtection().Closure(root, ClosureOptions{Workspace: ws}).Match(".hooks/pre-commit"); ok {
		t.Errorf(".hooks/pre-commit protected without a hooksPath: %s", why)
	}
}

// TestClosureNixImports: `use flake`/`use nix` evaluate what flake.nix or
// shell.nix import (a split-out devshell with a shellHook), recursively;
// the project's other files stay free.
func TestClosureNixImports(t *testing.T) {
	_, root := plant(t, map[string]string{
		".envrc":            "use flake\n",
		"flake.nix":         "{ outputs = { self, nixpkgs }: { devShells.x86_64-linux.default = import ./nix/devshell.nix { }; }; }\n",
		"nix/devshell.nix":  "{ pkgs ? import <nixpkgs> {} }: pkgs.mkShell { shellHook = builtins.readFile ./hook.sh; inputsFrom = [ (import ../tools) ]; }\n",
		"nix/hook.sh":       "echo hi\n",
		"tools/default.nix": "{ }\n",
		"src/main.c":        "x",
	})
	c := defaultProtection().Closure(root, ClosureOptions{Workspace: "/ws"})
	for _, p := range []string{"flake.nix", "nix/devshell.nix", "nix/hook.sh", "tools/default.nix"} {
		if _, ok := c.Match(p); !ok {
			t.Errorf("%s is not protected", p)
		}
	}
	for _, p := range []string{"src/main.c", "tools/other.c"} {
		if why, ok := c.Match(p); ok {
			t.Errorf("%s is protected: %s", p, why)
		}
	}
}
