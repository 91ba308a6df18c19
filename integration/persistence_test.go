//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPersistenceAttempts is the red team's table: every way an agent
// tried to plant something a host program later runs, by Write, by Edit
// and by a permitted (bypassPermissions) shell command, followed by the
// owner's own git status, log, diff and checkout and by sourcing .envrc
// the way direnv would. No marker may appear on the host, and every
// protected path must end byte for byte as it started.
func TestPersistenceAttempts(t *testing.T) {
	ws := newWorkspace(t)
	traversable(t, ws)
	state := t.TempDir()
	hostDir := t.TempDir()
	must(t, os.Chmod(hostDir, 0o777))
	marker := filepath.Join(hostDir, "PWNED")
	evil := "touch " + marker

	// A repository with a commit, as a user would have it, and some
	// protected files that exist before the agent starts.
	home := t.TempDir()
	must(t, os.Chown(home, wsUID, wsGID))
	must(t, os.Chmod(filepath.Dir(home), 0o755))
	git := func(args ...string) string {
		t.Helper()
		return asOwner(t, ws, home, "git", args...)
	}
	git("init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("{}\n"), 0o644))
	chownWS(t, ws)
	git("add", "-A")
	git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-q", "-m", "init")
	chownWS(t, ws)
	before := protectedSnapshot(t, ws)

	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfgFile, []byte("tools:\n  mode: bypassPermissions\nsandbox:\n  image: agentbox/host\n  pool_size: 0\n"), 0o644))
	fsmonitor := "[core]\n\tfsmonitor = \"" + evil + "\"\n"
	hook := "#!/bin/sh\n" + evil + "\n"
	type attempt struct {
		name string
		tool string
		args map[string]any
	}
	var attempts []attempt
	files := map[string]string{
		".git/config":                     fsmonitor,
		".git/config.worktree":            fsmonitor,
		".git/commondir":                  "../evilgit\n",
		".git/hooks/post-checkout":        hook,
		".git/hooks/pre-commit":           hook,
		".git/info/attributes":            "* diff=evil\n",
		".git/objects/info/alternates":    "/tmp\n",
		".git/modules/sub/config":         fsmonitor,
		".git/worktrees/wt/config":        fsmonitor,
		".vscode/tasks.json":              `{"tasks":[{"label":"x","command":"` + evil + `","runOptions":{"runOn":"folderOpen"}}]}`,
		".vscode/settings.json":           `{"git.path":"/tmp/evil"}`,
		".idea/workspace.xml":             "<x/>",
		".devcontainer/devcontainer.json": `{"postCreateCommand":"` + evil + `"}`,
		".envrc":                          evil + "\n",
		".npmrc":                          "script-shell=/tmp/evil\n",
		".yarnrc.yml":                     "yarnPath: evil.js\n",
		".bashrc":                         evil + "\n",
		".claude/settings.json":           `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"` + evil + `"}]}]}}`,
		".mcp.json":                       `{"mcpServers":{"x":{"command":"sh","args":["-c","` + evil + `"]}}}`,
		".cursor/mcp.json":                `{"mcpServers":{}}`,
		".agentbox/config.yaml":           "tools:\n  deny: []\n",
		".ripgreprc":                      "--pre=/tmp/evil\n",
		"sub/.envrc":                      evil + "\n",
	}
	for p, content := range files {
		attempts = append(attempts,
			attempt{"Write " + p, "Write", map[string]any{"file_path": filepath.Join(ws, p), "content": content}},
			attempt{"shell " + p, "Bash", map[string]any{"command": fmt.Sprintf("mkdir -p %q && printf '%%s' %s > %q", filepath.Dir(p), shellQuote(content), p)}})
	}
	for _, p := range []string{".envrc", ".vscode/settings.json", ".git/config"} {
		attempts = append(attempts, attempt{"Edit " + p, "Edit", map[string]any{"file_path": filepath.Join(ws, p), "old_string": "{}", "new_string": `{"x":1}`}})
	}
	attempts = append(attempts,
		attempt{"mv .git and rebuild", "Bash", map[string]any{"command": "mv .git .git-old; mkdir -p .git2/hooks && git init -q .git3; cp -r .git-old/. .git 2>/dev/null; printf '%s' " + shellQuote(fsmonitor) + " > .git/config"}},
		attempt{"git init in a subdirectory with fsmonitor", "Bash", map[string]any{"command": "git init -q nested && git -C nested config core.fsmonitor " + shellQuote(evil)}},
		attempt{"commondir redirection", "Bash", map[string]any{"command": "mkdir -p evilgit/hooks && printf '%s' " + shellQuote(fsmonitor) + " > evilgit/config && printf '../evilgit\\n' > .git/commondir"}},
		attempt{"bare repository assembled", "Bash", map[string]any{"command": "mkdir -p bare && cd bare && printf '%s' " + shellQuote(fsmonitor) + " > config && mkdir objects refs && echo 'ref: refs/heads/main' > HEAD"}},
		attempt{"gitdir pointer file", "Bash", map[string]any{"command": "mkdir -p evil2/.realgit/objects evil2/.realgit/refs && echo 'ref: refs/heads/x' > evil2/.realgit/HEAD && printf '%s' " + shellQuote(fsmonitor) + " > evil2/.realgit/config && echo 'gitdir: .realgit' > evil2/.git"}},
		attempt{"submodule config", "Bash", map[string]any{"command": "mkdir -p .git/modules/lib && printf '%s' " + shellQuote(fsmonitor) + " > .git/modules/lib/config && printf '[submodule \"lib\"]\\n\\tpath = lib\\n\\turl = ./lib\\n' > .gitmodules"}},
	)
	for _, a := range attempts {
		in, _ := json.Marshal(a.args)
		out, _ := runAgentbox(t, ws, state, cfgFile, "tool", a.tool, string(in), "--json")
		var res struct {
			OK    bool `json:"ok"`
			Error *struct {
				Kind string `json:"kind"`
			} `json:"error"`
			Meta map[string]any `json:"meta"`
		}
		if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil {
			t.Errorf("%s: unreadable result %q", a.name, out)
			continue
		}
		kind := ""
		if res.Error != nil {
			kind = res.Error.Kind
		}
		t.Logf("%-45s ok=%v kind=%s reverted=%v", a.name, res.OK, kind, res.Meta["reverted"] != nil)
		if a.tool != "Bash" && res.OK {
			t.Errorf("%s: a file tool wrote a protected path without approval", a.name)
		}
	}

	// The owner goes on working on the host.
	for _, args := range [][]string{{"status"}, {"log", "--oneline"}, {"diff"}, {"checkout", "-q", "--", "."}, {"checkout", "-q", "-b", "other"}, {"-C", "nested", "status"}, {"-C", "bare", "status"}, {"-C", "evil2", "status"}, {"-C", "sub", "status"}} {
		asOwnerMaybe(ws, home, "git", args...)
	}
	if _, err := os.Stat(filepath.Join(ws, ".envrc")); err == nil {
		asOwnerMaybe(ws, home, "bash", "-c", "source ./.envrc")
	}
	if _, err := os.Stat(filepath.Join(ws, "sub", ".envrc")); err == nil {
		asOwnerMaybe(filepath.Join(ws, "sub"), home, "bash", "-c", "source ./.envrc")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a host program ran planted code (%s exists)", marker)
	}
	after := protectedSnapshot(t, ws)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("protected path %s changed: %q -> %q", p, b, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("protected path %s appeared", p)
		}
	}
}

// TestApprovedGitCommit: an approved commit works in the sandbox, is in
// the history and can be undone.
func TestApprovedGitCommit(t *testing.T) {
	ws := newWorkspace(t)
	traversable(t, ws)
	state := t.TempDir()
	home := t.TempDir()
	must(t, os.Chown(home, wsUID, wsGID))
	must(t, os.Chmod(filepath.Dir(home), 0o755))
	asOwner(t, ws, home, "git", "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644))
	chownWS(t, ws)
	asOwner(t, ws, home, "git", "add", "-A")
	asOwner(t, ws, home, "git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-q", "-m", "init")
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644))
	chownWS(t, ws)
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfgFile, []byte("tools:\n  mode: bypassPermissions\nsandbox:\n  image: agentbox/host\n  pool_size: 0\n"), 0o644))
	out, err := runAgentbox(t, ws, state, cfgFile, "tool", "Bash", `{"command":"git -c user.name=agent -c user.email=a@x commit -q -am second && git log --oneline | wc -l"}`, "--json")
	if err != nil || !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"content":"2`) {
		t.Fatalf("commit in the sandbox: %v %s", err, out)
	}
	if got := asOwner(t, ws, home, "git", "log", "--format=%an %s", "-1"); strings.TrimSpace(got) != "agent second" {
		t.Fatalf("host sees %q", got)
	}
	hist, err := runAgentbox(t, ws, state, cfgFile, "history", "--json")
	must(t, err)
	if !strings.Contains(hist, ".git/refs/heads/main") && !strings.Contains(hist, ".git/logs") {
		t.Errorf("the commit's ref change is not in history: %s", hist)
	}
	if out, err := runAgentbox(t, ws, state, cfgFile, "undo"); err != nil {
		t.Fatalf("undo: %v %s", err, out)
	}
	if got := asOwner(t, ws, home, "git", "log", "--format=%s", "-1"); strings.TrimSpace(got) != "init" {
		t.Errorf("after undo the head commit is %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two\n" {
		t.Errorf("after undo a.txt is %q", b)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// traversable lets the owner reach ws as the tests' temporary
// directories are root's and 0700.
func traversable(t *testing.T, ws string) {
	t.Helper()
	must(t, os.Chmod(filepath.Dir(ws), 0o755))
	must(t, os.Chmod(filepath.Dir(filepath.Dir(ws)), 0o755))
}

func chownWS(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error { return os.Lchown(p, wsUID, wsGID) })
}

// asOwner runs a program as the workspace owner with its own HOME.
func asOwner(t *testing.T, dir, home, prog string, args ...string) string {
	t.Helper()
	out, err := ownerCmd(dir, home, prog, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
	}
	return string(out)
}

func asOwnerMaybe(dir, home, prog string, args ...string) {
	ownerCmd(dir, home, prog, args...).Run()
}

func ownerCmd(dir, home, prog string, args ...string) *exec.Cmd {
	c := exec.Command(prog, args...)
	c.Dir = dir
	c.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: wsUID, Gid: wsGID}}
	return c
}

// protectedSnapshot maps every protected path that exists (and every
// file under a protected directory) to its content.
func protectedSnapshot(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	roots := []string{".git/config", ".git/hooks", ".git/info", ".git/commondir", ".git/config.worktree", ".git/objects/info",
		".git/modules", ".git/worktrees", ".vscode", ".idea", ".devcontainer", ".envrc", ".npmrc", ".yarnrc.yml", ".bashrc",
		".claude", ".mcp.json", ".cursor", ".agentbox", ".ripgreprc", "sub/.envrc", "nested/.git", "bare/HEAD", "bare/config", "evil2/.git", ".gitmodules"}
	for _, r := range roots {
		filepath.WalkDir(filepath.Join(ws, r), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(ws, p)
			if d.IsDir() {
				out[rel] = "<dir>"
				return nil
			}
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
			return nil
		})
	}
	return out
}
