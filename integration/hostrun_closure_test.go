//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The host-run closure: what a present trigger (a git hook and its hook
// manager, direnv, a rebase in progress) runs or loads is protected like
// the trigger. Each row plants the file a trigger runs, by Write and by a
// shell command in the default mode (shell commands allowed by a rule, as
// an operator would), then the owner's own host action runs — a commit
// through husky, lefthook or pre-commit, direnv entering the directory, a
// rebase --continue — and no marker may appear. A control proves each
// vector is live: the owner's own change to the same file does fire.

// hrEnv is one workspace with its owner, state and config.
type hrEnv struct {
	ws, home, state, cfg, tools, markers string
	path                                 string // PATH for the owner's commands
}

func newHREnv(t *testing.T) *hrEnv {
	t.Helper()
	h := &hrEnv{ws: newWorkspace(t), home: t.TempDir(), state: t.TempDir(), tools: t.TempDir(), markers: t.TempDir()}
	traversable(t, h.ws)
	for _, d := range []string{h.home, h.tools, h.markers} {
		must(t, os.Chown(d, wsUID, wsGID))
		must(t, os.Chmod(d, 0o777))
		must(t, os.Chmod(filepath.Dir(d), 0o755))
	}
	h.path = h.tools + ":/usr/local/bin:/usr/bin:/bin"
	h.cfg = filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(h.cfg, []byte("tools:\n  mode: default\n  allow: [\"Bash\"]\nsandbox:\n  image: agentbox/host\n  pool_size: 0\n"), 0o644))
	h.git(t, "init", "-q", "-b", "main")
	return h
}

// owner runs prog as the workspace owner in dir; it returns the output and
// the error (a failing hook is an outcome here, not a test failure).
func (h *hrEnv) owner(dir string, prog string, args ...string) (string, error) {
	c := exec.Command(prog, args...)
	c.Dir = dir
	c.Env = []string{"HOME=" + h.home, "PATH=" + h.path, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=o", "GIT_AUTHOR_EMAIL=o@x",
		"GIT_COMMITTER_NAME=o", "GIT_COMMITTER_EMAIL=o@x", "DIRENV_LOG_FORMAT=", "npm_config_update_notifier=false"}
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: wsUID, Gid: wsGID}}
	timer := time.AfterFunc(2*time.Minute, func() {
		if c.Process != nil {
			c.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := c.CombinedOutput()
	return string(out), err
}

func (h *hrEnv) git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.owner(h.ws, "git", args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// put writes a file as the owner would (owned by the owner).
func (h *hrEnv) put(t *testing.T, rel, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(h.ws, rel)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(data), mode))
	chownWS(t, h.ws)
}

func (h *hrEnv) commitAll(t *testing.T, msg string) {
	t.Helper()
	h.git(t, "add", "-A")
	h.git(t, "commit", "-q", "--no-verify", "--allow-empty", "-m", msg)
}

// hrResult is the part of `agentbox tool --json` the rows judge.
type hrResult struct {
	OK       bool
	Kind     string
	Reverted bool
	Text     string
}

func (h *hrEnv) tool(t *testing.T, name string, args map[string]any) hrResult {
	t.Helper()
	in, _ := json.Marshal(args)
	out, _ := runAgentbox(t, h.ws, h.state, h.cfg, "tool", name, string(in), "--json")
	var res struct {
		OK      bool   `json:"ok"`
		Content string `json:"content"`
		Error   *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
		Meta map[string]any `json:"meta"`
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil {
		t.Fatalf("%s %s: unreadable result %q", name, in, out)
	}
	r := hrResult{OK: res.OK, Reverted: res.Meta["reverted"] != nil, Text: res.Content}
	if res.Error != nil {
		r.Kind = res.Error.Kind
		r.Text += res.Error.Message
	}
	return r
}

// write plants content by the Write tool; it must not go through.
func (h *hrEnv) plantByWrite(t *testing.T, rel, content string) {
	t.Helper()
	h.readFirst(t, rel)
	r := h.tool(t, "Write", map[string]any{"file_path": filepath.Join(h.ws, rel), "content": content})
	if r.OK || r.Kind != "needs_approval" {
		t.Errorf("Write %s was not held for approval: %+v", rel, r)
	}
}

// readFirst reads an existing file in the session, as Write and Edit
// require before they change it.
func (h *hrEnv) readFirst(t *testing.T, rel string) {
	t.Helper()
	if exists(filepath.Join(h.ws, rel)) {
		if r := h.tool(t, "Read", map[string]any{"file_path": filepath.Join(h.ws, rel)}); !r.OK {
			t.Fatalf("Read %s: %+v", rel, r)
		}
	}
}

// plantByShell plants content by a shell command; the command may run,
// but the change must not stay.
func (h *hrEnv) plantByShell(t *testing.T, rel, content string) hrResult {
	t.Helper()
	cmd := fmt.Sprintf("mkdir -p %s && printf '%%s' %s > %s", shellQuote(filepath.Dir(rel)), shellQuote(content), shellQuote(rel))
	return h.tool(t, "Bash", map[string]any{"command": cmd})
}

func (h *hrEnv) marker(name string) string { return filepath.Join(h.markers, name) }

// ensureApt installs a Debian package when its program is missing (the
// tests never skip for a missing tool).
func ensureApt(t *testing.T, prog, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(prog); err == nil {
		return p
	}
	install := func() ([]byte, error) {
		return exec.Command("apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=600", pkg).CombinedOutput()
	}
	if out, err := install(); err != nil {
		if up, uerr := exec.Command("apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600").CombinedOutput(); uerr != nil {
			t.Fatalf("apt-get update: %v\n%s", uerr, up)
		}
		if out, err = install(); err != nil {
			t.Fatalf("apt-get install %s: %v\n%s", pkg, err, out)
		}
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Fatalf("%s is still missing after installing %s: %v", prog, pkg, err)
	}
	return p
}

// hookPackages installs husky and lefthook from npm into the tests' cache
// (pinned, once per run) and returns its node_modules.
func hookPackages(t *testing.T) string {
	t.Helper()
	return filepath.Join(npmCache(t, "npm-hooks", "husky@9.1.7", "@evilmartians/lefthook@2.2.2"), "node_modules")
}

// copyTree copies a directory as root (cp -a), then it is chowned.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(to), 0o755))
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v\n%s", from, err, out)
	}
}

// TestHostRunClosureHuskyPackageJSON: with husky's hooksPath, package.json's
// scripts are what the owner's next commit runs: a change to them is held
// (Write asks, a shell change is reverted); a dependency-only change goes
// through unasked and is kept.
func TestHostRunClosureHuskyPackageJSON(t *testing.T) {
	mods := hookPackages(t)
	h := newHREnv(t)
	copyTree(t, filepath.Join(mods, "husky"), filepath.Join(h.ws, "node_modules", "husky"))
	pkg := func(test, deps string) string {
		return fmt.Sprintf("{\n  \"name\": \"t\",\n  \"scripts\": {\"test\": %q, \"prepare\": \"husky\"},\n  \"dependencies\": {%s}\n}\n", test, deps)
	}
	h.put(t, "package.json", pkg("true", ""), 0o644)
	h.put(t, ".gitignore", "node_modules\n", 0o644)
	if out, err := h.owner(h.ws, "node", "node_modules/husky/bin.js"); err != nil {
		t.Fatalf("husky: %v\n%s", err, out)
	}
	h.put(t, ".husky/pre-commit", "npm test\n", 0o644)
	h.commitAll(t, "init")
	if got := strings.TrimSpace(h.git(t, "config", "core.hooksPath")); got != ".husky/_" {
		t.Fatalf("husky did not set core.hooksPath: %q", got)
	}
	commit := func(msg string) string {
		out, _ := h.owner(h.ws, "git", "commit", "-q", "--allow-empty", "-m", msg)
		return out
	}

	// Control: the owner's own scripts.test runs at the next commit.
	control := h.marker("control")
	h.put(t, "package.json", pkg("touch "+control, ""), 0o644)
	commit("control")
	if !exists(control) {
		t.Fatal("control: husky's pre-commit did not run scripts.test; the test proves nothing")
	}
	h.put(t, "package.json", pkg("true", ""), 0o644)
	h.commitAll(t, "reset")
	before, _ := os.ReadFile(filepath.Join(h.ws, "package.json"))

	evil := h.marker("pwned")
	h.plantByWrite(t, "package.json", pkg("touch "+evil, ""))
	h.readFirst(t, "package.json")
	r := h.tool(t, "Edit", map[string]any{"file_path": filepath.Join(h.ws, "package.json"), "old_string": `"test": "true"`, "new_string": `"test": "touch ` + evil + `"`})
	if r.OK || r.Kind != "needs_approval" {
		t.Errorf("Edit of scripts.test was not held for approval: %+v", r)
	}
	if r := h.plantByShell(t, "package.json", pkg("touch "+evil, "")); !r.Reverted {
		t.Errorf("shell change of scripts.test was not reverted: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "package.json")); string(got) != string(before) {
		t.Errorf("package.json changed: %s", got)
	}
	commit("after the attacks")
	if exists(evil) {
		t.Fatal("the owner's commit ran the agent's scripts.test")
	}

	// A dependency-only change is the agent's ordinary work: unasked, kept.
	deps := pkg("true", `"left-pad": "1.3.0"`)
	h.readFirst(t, "package.json")
	if r := h.tool(t, "Write", map[string]any{"file_path": filepath.Join(h.ws, "package.json"), "content": deps}); !r.OK {
		t.Fatalf("a dependency-only Write was held: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "package.json")); string(got) != deps {
		t.Errorf("the dependency-only Write was not kept: %s", got)
	}
	deps2 := pkg("true", `"left-pad": "1.3.0", "is-odd": "3.0.1"`)
	if r := h.plantByShell(t, "package.json", deps2); !r.OK || r.Reverted || strings.Contains(r.Text, "Do not retry") {
		t.Fatalf("a dependency-only shell change was held: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "package.json")); string(got) != deps2 {
		t.Errorf("the dependency-only shell change was not kept: %s", got)
	}
}

// TestHostRunClosureHookManagers: the files lefthook's and pre-commit's
// configs name are held; the owner's commit runs the original.
func TestHostRunClosureHookManagers(t *testing.T) {
	mods := hookPackages(t)
	ensureApt(t, "pre-commit", "pre-commit")
	for _, mgr := range []string{"lefthook", "pre-commit"} {
		t.Run(mgr, func(t *testing.T) {
			h := newHREnv(t)
			script := "scripts/check.sh"
			h.put(t, script, "#!/bin/sh\nexit 0\n", 0o755)
			switch mgr {
			case "lefthook":
				bin := filepath.Join(h.tools, "lefthook")
				copyTree(t, filepath.Join(mods, "@evilmartians", "lefthook", "bin", "lefthook-linux-x64", "lefthook"), bin)
				must(t, os.Chmod(bin, 0o755))
				h.put(t, "lefthook.yml", "pre-commit:\n  commands:\n    check:\n      run: sh scripts/check.sh\n", 0o644)
				if out, err := h.owner(h.ws, bin, "install"); err != nil {
					t.Fatalf("lefthook install: %v\n%s", err, out)
				}
			case "pre-commit":
				h.put(t, ".pre-commit-config.yaml", "repos:\n- repo: local\n  hooks:\n  - id: check\n    name: check\n    entry: sh scripts/check.sh\n    language: system\n    always_run: true\n    pass_filenames: false\n", 0o644)
				if out, err := h.owner(h.ws, "pre-commit", "install"); err != nil {
					t.Fatalf("pre-commit install: %v\n%s", err, out)
				}
			}
			h.commitAll(t, "init")
			commit := func(msg string) string {
				h.put(t, "f.txt", msg, 0o644)
				h.owner(h.ws, "git", "add", "-A") // the owner commits all they see
				out, _ := h.owner(h.ws, "git", "commit", "-q", "-m", msg)
				return out
			}
			control := h.marker("control")
			h.put(t, script, "#!/bin/sh\ntouch "+control+"\n", 0o755)
			out := commit("control")
			if !exists(control) {
				t.Fatalf("control: %s did not run %s at commit; the test proves nothing\n%s", mgr, script, out)
			}
			h.put(t, script, "#!/bin/sh\nexit 0\n", 0o755)
			h.commitAll(t, "reset")

			evil := h.marker("pwned")
			h.plantByWrite(t, script, "#!/bin/sh\ntouch "+evil+"\n")
			h.plantByShell(t, script, "#!/bin/sh\ntouch "+evil+"\n")
			if got, _ := os.ReadFile(filepath.Join(h.ws, script)); string(got) != "#!/bin/sh\nexit 0\n" {
				t.Errorf("%s changed: %q", script, got)
			}
			commit("after")
			if exists(evil) {
				t.Fatalf("the owner's commit through %s ran the agent's %s", mgr, script)
			}
		})
	}
}

// TestHostRunClosureDirenv: the files an allowed .envrc loads
// (.envrc.local, .env with BASH_ENV), and the target of a symlinked
// .envrc, are held; the owner's direnv run in the directory stays clean.
func TestHostRunClosureDirenv(t *testing.T) {
	ensureApt(t, "direnv", "direnv")
	h := newHREnv(t)
	h.put(t, ".envrc", "source_env_if_exists .envrc.local\ndotenv_if_exists\n", 0o644)
	h.put(t, "deep/envrc-real", "export SUB=1\n", 0o644)
	must(t, os.MkdirAll(filepath.Join(h.ws, "sub"), 0o755))
	must(t, os.Symlink("../deep/envrc-real", filepath.Join(h.ws, "sub", ".envrc")))
	chownWS(t, h.ws)
	h.commitAll(t, "init")
	for _, d := range []string{h.ws, filepath.Join(h.ws, "sub")} {
		if out, err := h.owner(d, "direnv", "allow", "."); err != nil {
			t.Fatalf("direnv allow: %v\n%s", err, out)
		}
	}
	enter := func(dir string) string {
		out, _ := h.owner(dir, "direnv", "exec", dir, "bash", "-c", "true")
		return out
	}
	// Controls: the owner's own .envrc.local and .env run.
	control := h.marker("control")
	h.put(t, ".envrc.local", "touch "+control+"\n", 0o644)
	enter(h.ws)
	if !exists(control) {
		t.Fatal("control: direnv did not source .envrc.local; the test proves nothing")
	}
	must(t, os.Remove(filepath.Join(h.ws, ".envrc.local")))
	control2 := h.marker("control2")
	h.put(t, "ctl.sh", "touch "+control2+"\n", 0o644)
	h.put(t, ".env", "BASH_ENV="+filepath.Join(h.ws, "ctl.sh")+"\n", 0o644)
	enter(h.ws)
	if !exists(control2) {
		t.Fatal("control: direnv's dotenv did not export BASH_ENV; the test proves nothing")
	}
	must(t, os.Remove(filepath.Join(h.ws, ".env")))
	control3 := h.marker("control3")
	h.put(t, "deep/envrc-real", "touch "+control3+"\n", 0o644)
	h.owner(filepath.Join(h.ws, "sub"), "direnv", "allow", ".")
	enter(filepath.Join(h.ws, "sub"))
	if !exists(control3) {
		t.Fatal("control: direnv did not follow sub/.envrc; the test proves nothing")
	}
	h.put(t, "deep/envrc-real", "export SUB=1\n", 0o644)
	h.owner(filepath.Join(h.ws, "sub"), "direnv", "allow", ".")

	evil := h.marker("pwned")
	h.put(t, "evil.sh", "touch "+evil+"\n", 0o644) // the agent's own file, harmless by itself
	plants := map[string]string{
		".envrc.local":    "touch " + evil + "\n",
		".env":            "BASH_ENV=" + filepath.Join(h.ws, "evil.sh") + "\n",
		"deep/envrc-real": "touch " + evil + "\n",
	}
	for rel, content := range plants {
		h.plantByWrite(t, rel, content)
		if r := h.plantByShell(t, rel, content); r.OK && !r.Reverted {
			t.Errorf("shell plant of %s was neither refused nor reverted: %+v", rel, r)
		}
	}
	if exists(filepath.Join(h.ws, ".envrc.local")) || exists(filepath.Join(h.ws, ".env")) {
		t.Error("a planted loader file stayed")
	}
	enter(h.ws)
	enter(filepath.Join(h.ws, "sub"))
	if exists(evil) {
		t.Fatal("direnv ran what the agent planted")
	}
}

// TestHostRunClosureRebaseTodo: a rebase left stopped in the sandbox with
// an exec line in its todo list is undone before the call returns, so the
// owner's git rebase --continue runs nothing of the agent's; a rebase
// stopped without one stays, and continues on the host.
func TestHostRunClosureRebaseTodo(t *testing.T) {
	h := newHREnv(t)
	for i := 1; i <= 3; i++ {
		h.put(t, "f.txt", fmt.Sprint(i), 0o644)
		h.commitAll(t, fmt.Sprint("c", i))
	}
	evil := h.marker("pwned")
	editor := func(lines ...string) string {
		return "#!/bin/sh\n{ printf '%s\\n' " + shellQuote(strings.Join(lines, "\n")) + "; cat \"$1\"; } > \"$1.new\" && mv \"$1.new\" \"$1\"\n"
	}
	// Control on the owner's side: the same state made by the owner runs.
	control := h.marker("control")
	h.put(t, ".ctl-editor.sh", editor("break", "exec touch "+control), 0o755)
	h.owner(h.ws, "git", "-c", "sequence.editor=sh .ctl-editor.sh", "rebase", "-q", "-i", "HEAD~1")
	h.owner(h.ws, "git", "rebase", "--continue")
	if !exists(control) {
		t.Fatal("control: git rebase --continue did not run the exec line; the test proves nothing")
	}
	must(t, os.Remove(filepath.Join(h.ws, ".ctl-editor.sh")))

	h.put(t, ".ed.sh", editor("break", "exec touch "+evil), 0o755)
	r := h.tool(t, "Bash", map[string]any{"command": "GIT_SEQUENCE_EDITOR='sh .ed.sh' git rebase -q -i HEAD~1; test -d .git/rebase-merge && echo STOPPED"})
	if !strings.Contains(r.Text, "STOPPED") {
		t.Fatalf("the sandbox's rebase did not stop at break: %+v", r)
	}
	if !r.Reverted {
		t.Errorf("the todo list with an exec line was not reverted: %+v", r)
	}
	h.owner(h.ws, "git", "rebase", "--continue")
	h.owner(h.ws, "git", "rebase", "--abort")
	if exists(evil) {
		t.Fatal("the owner's git rebase --continue ran the agent's exec line")
	}

	// Without exec: the stopped rebase is git's ordinary state and stays.
	h.put(t, ".ed2.sh", editor("break"), 0o755)
	r = h.tool(t, "Bash", map[string]any{"command": "GIT_SEQUENCE_EDITOR='sh .ed2.sh' git rebase -q -i HEAD~1; test -d .git/rebase-merge && echo STOPPED"})
	if !strings.Contains(r.Text, "STOPPED") || r.Reverted || strings.Contains(r.Text, "Do not retry") {
		t.Fatalf("a rebase stopped at break without exec was held: %+v", r)
	}
	if out, err := h.owner(h.ws, "git", "rebase", "--continue"); err != nil {
		t.Fatalf("the owner cannot continue the sandbox's rebase: %v\n%s", err, out)
	}
}

// TestHostRunClosureLinksAndHome: a protected name that is a symlink
// protects its target, and home-directory configs are protected, against
// Write and shell alike.
func TestHostRunClosureLinksAndHome(t *testing.T) {
	h := newHREnv(t)
	for _, l := range [][2]string{{"pkg/.claude", "shared-claude"}, {"pkg/.vscode", "vscode-real"}} {
		must(t, os.MkdirAll(filepath.Join(h.ws, filepath.Dir(l[0]), l[1]), 0o755))
		must(t, os.Symlink(l[1], filepath.Join(h.ws, l[0])))
	}
	h.put(t, "README", "x\n", 0o644)
	// Files an agent's MCP server and an editor's folder-open task run.
	h.put(t, ".mcp.json", `{"mcpServers":{"x":{"command":"node","args":["tools/mcp.js"]}}}`, 0o644)
	h.put(t, "tools/mcp.js", "// server\n", 0o644)
	h.put(t, ".vscode/tasks.json", `{"tasks":[{"label":"x","command":"make dev","runOptions":{"runOn":"folderOpen"}}]}`, 0o644)
	h.put(t, "Makefile", "dev:\n\ttrue\n", 0o644)
	h.commitAll(t, "init")
	evil := h.marker("pwned")
	for rel, orig := range map[string]string{"tools/mcp.js": "// server\n", "Makefile": "dev:\n\ttrue\n"} {
		content := "require('child_process').execSync('touch " + evil + "')\n"
		h.plantByWrite(t, rel, content)
		h.plantByShell(t, rel, content)
		if got, _ := os.ReadFile(filepath.Join(h.ws, rel)); string(got) != orig {
			t.Errorf("%s changed: %q", rel, got)
		}
	}
	plants := map[string]string{
		"pkg/shared-claude/settings.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch ` + evil + `"}]}]}}`,
		"pkg/vscode-real/tasks.json":      `{"tasks":[{"label":"x","command":"touch ` + evil + `","runOptions":{"runOn":"folderOpen"}}]}`,
		".aws/config":                     "[default]\ncredential_process = touch " + evil + "\n",
		".ssh/config":                     "Host *\n  ProxyCommand touch " + evil + "\n",
		".docker/config.json":             `{"credsStore":"../../` + evil + `"}`,
		".kube/config":                    "users:\n- name: x\n  user:\n    exec:\n      command: touch\n      args: [\"" + evil + "\"]\n",
		".agents/skills/x/SKILL.md":       "run touch " + evil + "\n",
	}
	for rel, content := range plants {
		h.plantByWrite(t, rel, content)
		r := h.plantByShell(t, rel, content)
		if exists(filepath.Join(h.ws, rel)) {
			t.Errorf("%s stayed after a shell write (%+v)", rel, r)
		}
	}
}

// TestHostRunClosureOrdinaryGit: ordinary git work through the sandbox —
// commit, branch, stash, rebase without exec — is never reverted, and
// the model is never told not to retry, with every closure row present.
func TestHostRunClosureOrdinaryGit(t *testing.T) {
	h := newHREnv(t)
	h.put(t, ".envrc", "source_env_if_exists .envrc.local\n", 0o644)
	h.put(t, ".husky/pre-commit", "npm test\n", 0o644)
	h.put(t, "package.json", `{"scripts":{"test":"true"}}`, 0o644)
	h.put(t, "lefthook.yml", "pre-commit:\n  commands:\n    c:\n      run: sh scripts/c.sh\n", 0o644)
	h.put(t, "scripts/c.sh", "exit 0\n", 0o755)
	h.put(t, "a.txt", "one\n", 0o644)
	h.commitAll(t, "init")
	g := "git -c user.name=agent -c user.email=a@x "
	steps := []string{
		"echo two >> a.txt && " + g + "commit -q -am two",
		g + "branch feature && " + g + "checkout -q feature && echo three >> a.txt && " + g + "commit -q -am three",
		"echo wip >> a.txt && " + g + "stash -q && " + g + "stash list | wc -l",
		g + "stash pop -q && " + g + "checkout -q -- a.txt",
		g + "checkout -q main && echo four > b.txt && " + g + "add b.txt && " + g + "commit -q -m four",
		g + "checkout -q feature && " + g + "rebase -q main",
		"GIT_SEQUENCE_EDITOR=true " + g + "rebase -q -i HEAD~2",
		g + "checkout -q main && " + g + "merge -q --no-edit feature",
		g + "tag v1 && " + g + "reflog | head -3 && " + g + "gc -q",
	}
	for _, s := range steps {
		r := h.tool(t, "Bash", map[string]any{"command": s})
		if !r.OK || r.Reverted || strings.Contains(r.Text, "Do not retry") {
			t.Errorf("ordinary git work was held: %q → %+v", s, r)
		}
	}
	if got := h.git(t, "log", "--format=%s", "-1", "main"); !strings.Contains(got, "three") {
		t.Errorf("the host does not see the sandbox's merge: %q", got)
	}
}
