package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plant makes a workspace from a map: a value starting with "-> " is a
// symlink to the rest, one ending in "/" is a directory.
func plant(t testing.TB, files map[string]string) (string, *os.Root) {
	t.Helper()
	ws := t.TempDir()
	for p, v := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(v, "-> "):
			if err := os.Symlink(strings.TrimPrefix(v, "-> "), full); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(p, "/"):
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return ws, root
}

func defaultProtection() Protection { return Protection{patterns: DefaultProtectedPaths} }

func TestClosureMatch(t *testing.T) {
	husky := map[string]string{
		".git/config":       "[core]\n\thooksPath = .husky/_\n",
		".git/HEAD":         "ref: refs/heads/main\n",
		".husky/_/h":        "#!/bin/sh\n",
		".husky/pre-commit": "npm test\n./scripts/check.sh --fast\n",
		"scripts/check.sh":  "#!/bin/sh\n",
		"scripts/other.sh":  "#!/bin/sh\n",
		"package.json":      `{"scripts":{"test":"node t.js"}}`,
	}
	tests := []struct {
		name  string
		files map[string]string
		yes   []string
		no    []string
	}{
		{"husky hook names a script", husky,
			[]string{"scripts/check.sh", ".husky/pre-commit", ".git/config"},
			[]string{"scripts/other.sh", "package.json", "src/a.js"}},
		{"a hook runs a task runner", map[string]string{
			".git/hooks/pre-push": "#!/bin/sh\nmake lint && just -f ci/Justfile check\n",
			"Makefile":            "lint:\n\ttrue\n",
			"ci/Justfile":         "check:\n  true\n",
			".envrc":              "task setup\n",
			"Taskfile.yml":        "version: 3\n",
			"sub/Makefile":        "x",
		}, []string{"Makefile", "ci/Justfile", "Taskfile.yml"}, []string{"sub/Makefile", "justfile"}},
		{"agent and editor configs name what they run", map[string]string{
			".mcp.json":                       `{"mcpServers":{"x":{"command":"node","args":["tools/mcp.js"]}}}`,
			".claude/settings.json":           `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"sh scripts/start.sh"}]}]}}`,
			".vscode/tasks.json":              `{"tasks":[{"label":"x","command":"make dev","runOptions":{"runOn":"folderOpen"}}]}`,
			".devcontainer/devcontainer.json": `{"postCreateCommand":"bash .devcontainer/setup.sh"}`,
			".devcontainer/setup.sh":          "x",
			"tools/mcp.js":                    "x",
			"scripts/start.sh":                "x",
			"Makefile":                        "x",
		}, []string{"tools/mcp.js", "scripts/start.sh", "Makefile"}, []string{"tools/other.js"}},
		{"hooksPath outside the defaults", map[string]string{
			".git/config":          "[core]\n\thooksPath = tools/hooks\n[include]\n\tpath = ../gitconf.inc\n",
			"tools/hooks/pre-push": "make lint\n",
			"gitconf.inc":          "[core]\n\thooksPath = more-hooks\n",
		}, []string{"tools/hooks/pre-push", "tools/hooks/new-hook", "gitconf.inc", "more-hooks/post-checkout"},
			[]string{"tools/other", "Makefile"}},
		{"a nested repository's hooksPath and hooks", map[string]string{
			"sub/.git/config":         "[core]\n\thooksPath = hooks\n",
			"sub/.git/HEAD":           "ref: refs/heads/main\n",
			"sub/hooks/pre-commit":    "./tools/check.sh\n",
			"sub/tools/check.sh":      "x",
			"sub/.git/hooks/pre-push": "make\n",
			"sub/Makefile":            "x",
		}, []string{"sub/hooks/pre-commit", "sub/tools/check.sh", "sub/Makefile"}, []string{"hooks/x", "tools/check.sh"}},
		{"hooksPath absolute inside the workspace", map[string]string{
			".git/config": "[core]\n\thooksPath = WS/abs-hooks\n",
		}, []string{"abs-hooks/pre-commit"}, []string{"abs"}},
		{"hook symlinked to a tracked script", map[string]string{
			".git/hooks/pre-commit": "-> ../../scripts/pre-commit",
			"scripts/pre-commit":    "#!/bin/sh\nexit 0\n",
		}, []string{"scripts/pre-commit"}, []string{"scripts/x"}},
		{"direnv loaders", map[string]string{
			".envrc": "source_env_if_exists .envrc.local\ndotenv\nwatch_file config/app.yml\nuse flake\nPATH_add bin\n" +
				"export BASH_ENV=./tools/env.sh\nsource_env sub\n",
			"tools/env.sh": "x",
			"sub/":         "",
		}, []string{".envrc.local", ".env", "config/app.yml", "flake.nix", "flake.lock", "bin/git", "tools/env.sh", "sub/.envrc"},
			[]string{".env.example", "shell.nix", "src/main.go", "sub/x"}},
		{"direnv PATH through $PWD", map[string]string{
			"app/.envrc": "export PATH=\"$PWD/bin:$PATH\"\nPATH_add \"${PWD}/tools\"\nPATH=$PATH:$PWD/node_modules/.bin\n",
		}, []string{"app/bin/git", "app/tools/x"}, []string{"app/src/x", "bin/git", "app/node_modules/.bin/eslint"}},
		{"direnv PATH unknown fails closed", map[string]string{
			".envrc": "export PATH=$(pwd)/x:$PATH\n",
		}, []string{"bin/git", "scripts/a", "sbin/b"}, []string{"x2/y"}},
		{"direnv in a subdirectory and source_up", map[string]string{
			"a/b/.envrc": "source_up\nuse nix\ndotenv_if_exists .env.dev\n",
		}, []string{"a/b/shell.nix", "a/b/default.nix", "a/b/.env.dev", "a/.envrc", ".envrc"},
			[]string{"a/b/.env", "a/b/flake.nix"}},
		{"direnv unparsable fails closed", map[string]string{
			".envrc":       "if then fi ((\n",
			".env.staging": "A=1",
		}, []string{".env", ".env.staging", ".envrc.local", "shell.nix"}, []string{"main.go"}},
		{"direnv non-literal loader fails closed", map[string]string{
			".envrc":   `dotenv "$ENVFILE"` + "\n",
			".env.dev": "A=1",
		}, []string{".env.dev", ".env"}, []string{"x"}},
		{"symlinked protected names", map[string]string{
			"pkg/.claude":                 "-> shared-claude",
			"pkg/shared-claude/settings":  "{}",
			"pkg/.vscode":                 "-> vscode-real",
			"pkg/vscode-real/tasks.json":  "{}",
			"sub/.envrc":                  "-> ../deep/envrc-real",
			"deep/envrc-real":             "dotenv\n",
			".cargo":                      "-> cargo-real",
			"cargo-real/config.toml":      "",
			"outside":                     "-> /etc",
			"pkg/.idea":                   "-> ../../escape",
			"chain/.mcp.json":             "-> link2",
			"chain/link2":                 "-> final.json",
			"chain/final.json":            "{}",
			"pkg/notprotected-link":       "-> shared2",
			"pkg/shared2/settings.json":   "{}",
			"pkg/shared-claude-else/file": "",
		}, []string{"pkg/shared-claude/settings", "pkg/shared-claude/new.json", "pkg/vscode-real/tasks.json", "deep/envrc-real",
			"sub/.env", "cargo-real/config.toml", "chain/final.json", "chain/link2"},
			[]string{"pkg/shared2/settings.json", "pkg/shared-claude-else/file", "cargo-real/other", "deep/other"}},
		{"lefthook commands", map[string]string{
			"lefthook.yml": "pre-commit:\n  commands:\n    lint:\n      run: ./scripts/lint.sh {staged_files}\n" +
				"    fmt:\n      run: node tools/fmt.js\n  jobs:\n    - run: bash ci/job.sh\nrc: ./.lefthookrc\nsource_dir: hooks-src\n",
			"scripts/lint.sh": "x",
			"tools/fmt.js":    "x",
			"ci/job.sh":       "x",
			"src/":            "",
		}, []string{"scripts/lint.sh", "tools/fmt.js", "ci/job.sh", ".lefthookrc", "hooks-src/pre-commit/x", ".lefthook/pre-commit/y", "lefthook-local.yml"},
			[]string{"tools/other.js", "src/a.go"}},
		{"pre-commit local entries", map[string]string{
			".pre-commit-config.yaml": "repos:\n- repo: local\n  hooks:\n  - id: check\n    name: check\n    entry: ./hooks/check.py --strict\n    language: script\n" +
				"  - id: sys\n    name: sys\n    entry: python3 tools/lint.py\n    language: system\n" +
				"- repo: ./vendored-hooks\n  rev: v1\n  hooks:\n  - id: x\n- repo: https://github.com/x/y\n  rev: v1\n",
			"hooks/check.py":                        "x",
			"tools/lint.py":                         "x",
			"vendored-hooks/.pre-commit-hooks.yaml": "[]",
		}, []string{"hooks/check.py", "tools/lint.py", "vendored-hooks/hook.py"}, []string{"tools/other.py", "https:"}},
		{"lint-staged in package.json and rc", map[string]string{
			"package.json":      `{"lint-staged":{"*.js":["node tools/stage.js","eslint --fix"]}}`,
			".lintstagedrc.yml": "'*.md': node tools/md.js\n",
			"tools/stage.js":    "x",
			"tools/md.js":       "x",
		}, []string{"tools/stage.js", "tools/md.js", ".lintstagedrc.yml", "commitlint.config.js", ".simple-git-hooks.json"},
			[]string{"tools/x.js"}},
		{"mise env files and hooks", map[string]string{
			"mise.toml":      "[env]\n_.file = '.env.mise'\n_.source = 'env/setup.sh'\n[hooks]\nenter = 'bash tools/enter.sh'\n",
			"tools/enter.sh": "x",
		}, []string{".env.mise", "env/setup.sh", "tools/enter.sh"}, []string{"tools/x.sh"}},
		{"home directory configs", map[string]string{}, []string{".aws/config", ".ssh/config", ".docker/config.json", ".kube/config",
			".agents/skills/x/SKILL.md", ".gnupg/gpg-agent.conf", ".config/git/config", ".local/bin/git",
			".local/share/direnv/allow/abc", ".cache/pre-commit/repo1/hook.py", ".config/husky/init.sh",
			".local/lib/python3.11/site-packages/x.pth", ".local/share/nvim/lazy/p/init.lua", ".cargo/bin/cargo",
			".xinitrc", ".xsessionrc", ".tmux.conf", ".config/tmux/tmux.conf", ".gdbinit", ".vim/plugin/x.vim", ".emacs", ".emacs.d/init.el"},
			[]string{".aws/other", ".docker/other.json", "docker/config.json", ".config/other"}},
		{"git state and reflogs", map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/logs/HEAD": "x", ".git/logs/refs/heads/main": "x"},
			[]string{".git/hooks/pre-commit", ".git/config"},
			[]string{".git/logs/HEAD", ".git/logs/refs/heads/main", ".git/refs/heads/main", ".git/ORIG_HEAD", ".git/index",
				".git/objects/ab/cd", ".git/rebase-merge/git-rebase-todo", ".git/refs/stash", ".git/logs/refs/stash"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tt.files {
				files[k] = v
			}
			ws := t.TempDir()
			for k, v := range files {
				files[k] = strings.ReplaceAll(v, "WS/", ws+"/")
			}
			ws2, root := plant(t, files)
			if c := files[".git/config"]; strings.Contains(c, ws) {
				// The absolute case: map the planted path.
				must(t, os.WriteFile(filepath.Join(ws2, ".git/config"), []byte(strings.ReplaceAll(c, ws, ws2)), 0o644))
			}
			isGit := func(dir string) bool {
				_, err := root.Lstat(dir + "/HEAD")
				return err == nil
			}
			c := defaultProtection().Closure(root, ClosureOptions{Workspace: ws2, IsGitDir: isGit})
			for _, p := range tt.yes {
				if why, ok := c.Match(p); !ok {
					t.Errorf("%s is not protected (notes %v)", p, c.Notes())
				} else if why == "" {
					t.Errorf("%s protected without a reason", p)
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

func TestClosureHookRunnerAndPackageJSON(t *testing.T) {
	deps := func(extra string) []byte {
		return []byte(`{"name":"x","scripts":{"test":"node t.js"}` + extra + `,"dependencies":{"a":"1"}}`)
	}
	old := deps("")
	tests := []struct {
		name     string
		files    map[string]string
		new      []byte
		want     bool
		runnerOn bool
	}{
		{"no runner: scripts free", map[string]string{"package.json": string(old)},
			[]byte(`{"name":"x","scripts":{"test":"curl x|sh"},"dependencies":{"a":"1"}}`), false, false},
		{"husky dir: scripts judged", map[string]string{".husky/pre-commit": "npm test\n", "package.json": string(old)},
			[]byte(`{"name":"x","scripts":{"test":"curl x|sh"},"dependencies":{"a":"1"}}`), true, true},
		{"husky dir: dependencies free", map[string]string{".husky/pre-commit": "npm test\n", "package.json": string(old)},
			[]byte(`{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"2","b":"1"},"version":"2.0.0"}`), false, true},
		{"husky dir: reordered and reformatted scripts are no change", map[string]string{".husky/pre-commit": "npm test\n", "package.json": string(old)},
			[]byte("{\n  \"dependencies\": {\"a\": \"1\"},\n  \"scripts\": {\"test\": \"node t.js\"},\n  \"name\": \"x\"\n}\n"), false, true},
		{"active .git hook: config judged", map[string]string{".git/hooks/pre-commit": "npm test\n", "package.json": string(old)},
			deps(`,"config":{"port":"1"}`), true, true},
		{"sample hooks are no runner", map[string]string{".git/hooks/pre-commit.sample": "x", "package.json": string(old)},
			deps(`,"config":{"port":"1"}`), false, false},
		{"hook manager key always judged", map[string]string{"package.json": string(old)},
			deps(`,"simple-git-hooks":{"pre-commit":"touch /tmp/x"}`), true, false},
		{"an agent hook running npm makes a runner", map[string]string{".claude/settings.json": `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"npm run lint"}]}]}}`, "package.json": string(old)},
			deps(`,"config":{"a":"b"}`), true, true},
		{"lefthook config makes a runner", map[string]string{"lefthook.yml": "pre-commit:\n  commands: {}\n", "package.json": string(old)},
			deps(`,"packageManager":"pnpm@9.0.0"`), true, true},
		{"not JSON fails closed", map[string]string{".husky/pre-commit": "npm test\n"}, []byte("\ufeff{}"), true, true},
		{"deleted is free", map[string]string{".husky/pre-commit": "npm test\n"}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, root := plant(t, tt.files)
			c := defaultProtection().Closure(root, ClosureOptions{})
			if got := c.HookRunner() != ""; got != tt.runnerOn {
				t.Fatalf("hook runner %q, want present=%v", c.HookRunner(), tt.runnerOn)
			}
			judge := c.Judge("package.json")
			if judge == nil {
				t.Fatal("package.json has no judge")
			}
			why, got := judge(old, tt.new)
			if got != tt.want {
				t.Fatalf("judge = %v (%s), want %v", got, why, tt.want)
			}
			if _, ok := c.Match("package.json"); ok {
				t.Fatal("package.json must be judged by content, not protected by name")
			}
		})
	}
}

// TestClosureSpecialFiles: a FIFO or a directory at a trigger's name
// never hangs the computation, and fails closed.
func TestClosureSpecialFiles(t *testing.T) {
	ws, root := plant(t, map[string]string{".git/hooks/": "", "package.json/": ""})
	for _, name := range []string{".envrc", ".git/config", ".git/hooks/pre-commit", "lefthook.yml"} {
		if err := syscall.Mkfifo(filepath.Join(ws, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan *Closure)
	go func() { done <- defaultProtection().Closure(root, ClosureOptions{}) }()
	select {
	case c := <-done:
		if _, ok := c.Match(".env"); !ok {
			t.Error("an unreadable .envrc must protect what it might load")
		}
		if c.HookRunner() == "" {
			t.Error("an unreadable package.json or hook must count as a hook runner")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the closure hangs on a FIFO")
	}
}

func TestJudgeGitState(t *testing.T) {
	tests := []struct {
		rel, content string
		want         bool
	}{
		{".git/rebase-merge/git-rebase-todo", "pick abc one\npick def two\n", false},
		{".git/rebase-merge/git-rebase-todo", "pick abc one\nexec touch /tmp/x\n", true},
		{".git/rebase-merge/git-rebase-todo", "pick abc one\n  x make\n", true},
		{".git/rebase-merge/git-rebase-todo.backup", "x make\n", true},
		{".git/rebase-merge/done", "pick abc\n", false},
		{".git/rebase-merge/strategy", "ort\n", false},
		{".git/rebase-merge/strategy", "evil\n", true},
		{".git/rebase-merge/author-script", "GIT_AUTHOR_NAME='x'\n", false},
		{".git/rebase-apply/patch", "exec x\n", false},
		{".git/sequencer/todo", "pick abc\n", false},
		{".git/sequencer/todo", "exec sh\n", true},
		{".git/sequencer/opts", "[options]\n\tstrategy = ort\n", false},
		{".git/sequencer/opts", "[options]\n\tstrategy = pwn\n", true},
		{".git/sequencer/opts", "[options\n", true},
		{"sub/.git/rebase-merge/git-rebase-todo", "exec x\n", true},
	}
	c := defaultProtection().Closure(nil, ClosureOptions{})
	for _, tt := range tests {
		t.Run(tt.rel+"/"+tt.content, func(t *testing.T) {
			judge := c.Judge(tt.rel)
			if judge == nil {
				t.Fatal("no judge")
			}
			if _, got := judge(nil, []byte(tt.content)); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if _, got := judge([]byte(tt.content), nil); got {
				t.Fatal("a deleted state file runs nothing")
			}
		})
	}
	if c.Judge(".git/logs/HEAD") != nil || c.Judge("src/main.go") != nil {
		t.Fatal("only state files and package.json are judged by content")
	}
}

func FuzzJudgePackageJSON(f *testing.F) {
	f.Add([]byte(`{"scripts":{"test":"x"}}`), []byte(`{"scripts":{"test":"y"}}`), true)
	f.Add([]byte(`{"dependencies":{}}`), []byte(`{"dependencies":{"a":"1"}}`), true)
	f.Add([]byte(`{}`), []byte(`[]`), false)
	f.Add([]byte(`{"husky":{"hooks":{}}}`), []byte(`{"husky":{"hooks":{}}}`), false)
	f.Fuzz(func(t *testing.T, old, new []byte, runner bool) {
		why, got := judgePackageJSON(old, new, runner)
		if got && why == "" {
			t.Fatal("protected without a reason")
		}
		// The same content is never a change of a hook key, unless it
		// cannot be judged at all.
		if _, err := jsonObject(new); err == nil {
			if _, same := judgePackageJSON(new, new, runner); same {
				t.Fatal("identical content judged as a hook change")
			}
		} else if !got && new != nil {
			t.Fatal("content that is not a JSON object must fail closed")
		}
	})
}

func FuzzDirenv(f *testing.F) {
	f.Add([]byte("source_env_if_exists .envrc.local\ndotenv\n"))
	f.Add([]byte("use flake .#dev\nPATH_add bin\nwatch_file a b\n"))
	f.Add([]byte("source_up\nexport A=$(cat x)\n"))
	f.Add([]byte("if then ((\n"))
	f.Fuzz(func(t *testing.T, envrc []byte) {
		_, root := plant(t, map[string]string{"a/.envrc": string(envrc), "a/.env.x": "1"})
		c := defaultProtection().Closure(root, ClosureOptions{Shallow: true})
		b := closureBuilder{c: c, root: &obsRoot{r: root}}
		b.direnvAt("a/.envrc")
		if _, ok := c.Match("a/.envrc"); !ok {
			t.Fatal(".envrc itself must stay protected")
		}
		for p := range c.paths {
			if !filepath.IsLocal(p) {
				t.Fatalf("closure path %q leaves the workspace", p)
			}
		}
		if _, err := parseShellCalls(envrc); err != nil {
			if _, ok := c.Match("a/.env.x"); !ok {
				t.Fatal("an .envrc that cannot be parsed must protect every .env* beside it")
			}
		}
	})
}

// BenchmarkClosure: the full closure (tree walk included) of a
// workspace of 10,000 files in 500 directories with a husky hook, an
// .envrc and a few symlinks — what every Write and every changed shell
// call pays once.
func BenchmarkClosure(b *testing.B) {
	files := map[string]string{
		".git/config":       "[core]\n\thooksPath = .husky/_\n",
		".husky/pre-commit": "npm test\nmake lint\n",
		".envrc":            "source_env_if_exists .envrc.local\ndotenv\n",
		"Makefile":          "lint:\n",
		"package.json":      `{"scripts":{"test":"true"}}`,
		"pkg/.claude":       "-> shared",
	}
	for d := 0; d < 500; d++ {
		for f := 0; f < 20; f++ {
			files[fmt.Sprintf("src/d%03d/f%02d.go", d, f)] = "package x\n"
		}
	}
	ws, root := plant(b, files)
	prot := defaultProtection()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prot.Closure(root, ClosureOptions{Workspace: ws})
	}
}

// BenchmarkClosureMatch: one changed path judged against the name rules
// and a closure with hooks, scripts and an .envrc's files — what the
// snapshot guard pays for every path a call changed (an npm install
// changes tens of thousands).
func BenchmarkClosureMatch(b *testing.B) {
	ws, root := plant(b, map[string]string{
		".git/config":       "[core]\n\thooksPath = .husky/_\n",
		".husky/pre-commit": "sh scripts/a.sh && sh scripts/b.sh\nnpm test\n",
		".envrc":            "source_env_if_exists .envrc.local\ndotenv\n",
		"scripts/a.sh":      "", "scripts/b.sh": "",
		"package.json": `{"scripts":{"test":"true"}}`,
	})
	c := defaultProtection().Closure(root, ClosureOptions{Workspace: ws})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Match("node_modules/@scope/pkg/lib/internal/deep/file.js")
	}
}

// FuzzHookConfigs: whatever a hook manager's config holds, computing the
// closure terminates, and every path it protects lies in the workspace.
func FuzzHookConfigs(f *testing.F) {
	f.Add([]byte("pre-commit:\n  commands:\n    a:\n      run: sh x.sh\nrc: ../../etc/passwd\n"), []byte(`{"lint-staged":{"*":["node a.js"]}}`))
	f.Add([]byte("repos:\n- repo: local\n  hooks:\n  - entry: /abs/x\n"), []byte(`{"scripts":{}}`))
	f.Add([]byte("{{{"), []byte("\ufeff"))
	f.Fuzz(func(t *testing.T, yml, pkg []byte) {
		ws, root := plant(t, map[string]string{"lefthook.yml": string(yml), ".pre-commit-config.yaml": string(yml), "package.json": string(pkg), "x.sh": ""})
		c := defaultProtection().Closure(root, ClosureOptions{Workspace: ws})
		for p := range c.paths {
			if !filepath.IsLocal(p) {
				t.Fatalf("closure path %q leaves the workspace", p)
			}
		}
		if _, ok := c.Match("lefthook.yml"); !ok {
			t.Fatal("lefthook.yml must stay protected")
		}
	})
}
