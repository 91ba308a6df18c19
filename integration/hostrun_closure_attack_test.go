//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// Attacks on the host-run closure by vectors the first round did not
// name. Each plants in the default mode, then the owner does something
// that is not running project code on purpose, and no marker may appear.

// TestHostRunClosureShadowedCommand: with an allowed `.envrc` that says
// `layout node` (direnv puts node_modules/.bin first on PATH), a planted
// node_modules/.bin/git ran on the owner's next `git status` in the
// directory. It is held now; what npm install puts there stays free.
func TestHostRunClosureShadowedCommand(t *testing.T) {
	ensureApt(t, "direnv", "direnv")
	h := newHREnv(t)
	h.put(t, ".envrc", "layout node\n", 0o644)
	h.put(t, "node_modules/.bin/.keep", "", 0o644)
	h.commitAll(t, "init")
	if out, err := h.owner(h.ws, "direnv", "allow", "."); err != nil {
		t.Fatalf("direnv allow: %v\n%s", err, out)
	}
	gitStatus := func() string {
		out, _ := h.owner(h.ws, "direnv", "exec", h.ws, "git", "status", "--short")
		return out
	}
	shim := func(marker string) string {
		return "#!/bin/sh\ntouch " + marker + "\nexec /usr/bin/git \"$@\"\n"
	}
	// Control: the owner's own shim in node_modules/.bin shadows git.
	control := h.marker("control")
	h.put(t, "node_modules/.bin/git", shim(control), 0o755)
	gitStatus()
	if !exists(control) {
		t.Fatal("control: direnv's layout node did not put node_modules/.bin first; the test proves nothing")
	}
	must(t, os.Remove(filepath.Join(h.ws, "node_modules/.bin/git")))

	evil := h.marker("pwned")
	h.plantByWrite(t, "node_modules/.bin/git", shim(evil))
	if r := h.tool(t, "Bash", map[string]any{"command": "printf '%s' " + shellQuote(shim(evil)) + " > node_modules/.bin/git && chmod +x node_modules/.bin/git"}); r.OK && !r.Reverted {
		t.Errorf("shell plant of node_modules/.bin/git was neither refused nor reverted: %+v", r)
	}
	if exists(filepath.Join(h.ws, "node_modules/.bin/git")) {
		t.Error("the planted node_modules/.bin/git stayed")
	}
	gitStatus()
	if exists(evil) {
		t.Fatal("the owner's git status in the directory ran what the agent planted")
	}

	// Friction: a tool an install adds there is work product.
	r := h.tool(t, "Bash", map[string]any{"command": "printf '#!/bin/sh\\n' > node_modules/.bin/eslint && chmod +x node_modules/.bin/eslint"})
	if !r.OK || r.Reverted {
		t.Errorf("node_modules/.bin/eslint (an installed tool) was held: %+v", r)
	}
	if !exists(filepath.Join(h.ws, "node_modules/.bin/eslint")) {
		t.Error("node_modules/.bin/eslint did not stay")
	}
}

// TestHostRunClosureWorktreeScripts: the workspace is a linked worktree
// whose repository has a pre-commit hook running `npm test`; the hook
// lives outside the workspace. A Write of scripts.test is held (fail
// closed), the owner's commit runs nothing of the agent's, and a
// dependency-only change stays unasked.
func TestHostRunClosureWorktreeScripts(t *testing.T) {
	h := newHREnv(t)
	h.put(t, "package.json", `{"name":"x","scripts":{"test":"true"},"dependencies":{}}`+"\n", 0o644)
	h.commitAll(t, "init")
	h.put(t, ".git/hooks/pre-commit", "#!/bin/sh\nnpm test\n", 0o755)
	// The agent's workspace is a worktree of that repository.
	wt := newWorkspace(t)
	traversable(t, wt)
	must(t, os.Remove(wt))
	must(t, os.Chmod(filepath.Dir(wt), 0o777))
	h.git(t, "worktree", "add", "-q", "-b", "wt", wt)
	h.ws = wt
	// Control: the owner's own scripts.test runs on a commit there.
	control := h.marker("control")
	h.put(t, "package.json", `{"name":"x","scripts":{"test":"touch `+control+`"},"dependencies":{}}`+"\n", 0o644)
	h.git(t, "add", "package.json")
	if out, err := h.owner(wt, "git", "commit", "-q", "-m", "c"); err != nil || !exists(control) {
		t.Fatalf("control: the worktree's commit did not run scripts.test (%v); the test proves nothing\n%s", err, out)
	}
	h.put(t, "package.json", `{"name":"x","scripts":{"test":"true"},"dependencies":{}}`+"\n", 0o644)
	h.commitAll(t, "restore")
	evil := h.marker("pwned")
	h.readFirst(t, "package.json")
	r := h.tool(t, "Write", map[string]any{"file_path": filepath.Join(wt, "package.json"),
		"content": `{"name":"x","scripts":{"test":"touch ` + evil + `"},"dependencies":{}}` + "\n"})
	if r.OK || r.Kind != "needs_approval" {
		t.Errorf("Write of scripts.test in a worktree was not held: %+v", r)
	}
	h.put(t, "a.txt", "x", 0o644)
	h.git(t, "add", "a.txt")
	if out, err := h.owner(wt, "git", "commit", "-q", "-m", "a"); err != nil {
		t.Logf("commit: %v\n%s", err, out)
	}
	if exists(evil) {
		t.Fatal("the owner's commit in the worktree ran the agent's scripts.test")
	}
	// Friction: dependencies stay unasked.
	h.readFirst(t, "package.json")
	r = h.tool(t, "Write", map[string]any{"file_path": filepath.Join(wt, "package.json"),
		"content": `{"name":"x","scripts":{"test":"true"},"dependencies":{"left-pad":"1.3.0"}}` + "\n"})
	if !r.OK {
		t.Errorf("a dependency-only change in a worktree was held: %+v", r)
	}
}

// TestHostRunClosureOptionalHook: the owner's pre-commit hook runs a local
// hook only when it exists (`[ -x tools/local-hook ] && ./tools/local-hook`).
// Planting that file, which did not exist, ran it on the owner's commit.
func TestHostRunClosureOptionalHook(t *testing.T) {
	h := newHREnv(t)
	h.put(t, ".git/hooks/pre-commit", "#!/bin/sh\n[ -x tools/local-hook ] && ./tools/local-hook\nexit 0\n", 0o755)
	h.put(t, "README", "x\n", 0o644)
	h.commitAll(t, "init")
	commit := func(name string) {
		h.put(t, name, "x\n", 0o644)
		h.git(t, "add", name)
		h.git(t, "commit", "-q", "-m", name)
	}
	control := h.marker("control")
	h.put(t, "tools/local-hook", "#!/bin/sh\ntouch "+control+"\n", 0o755)
	commit("a")
	if !exists(control) {
		t.Fatal("control: the hook did not run tools/local-hook; the test proves nothing")
	}
	must(t, os.RemoveAll(filepath.Join(h.ws, "tools")))

	evil := h.marker("pwned")
	script := "#!/bin/sh\ntouch " + evil + "\n"
	h.plantByWrite(t, "tools/local-hook", script)
	if r := h.tool(t, "Bash", map[string]any{"command": "mkdir -p tools && printf '%s' " + shellQuote(script) + " > tools/local-hook && chmod +x tools/local-hook"}); r.OK && !r.Reverted {
		t.Errorf("shell plant of tools/local-hook was neither refused nor reverted: %+v", r)
	}
	if exists(filepath.Join(h.ws, "tools/local-hook")) {
		t.Error("the planted tools/local-hook stayed")
	}
	commit("b")
	if exists(evil) {
		t.Fatal("the owner's commit ran the hook the agent planted")
	}
}

// TestHostRunClosureDirenvGlob: an allowed .envrc that sources every file
// of a directory (`for f in env.d/*.sh; do . "$f"; done`) ran a changed or
// newly planted env.d file on the owner's next cd.
func TestHostRunClosureDirenvGlob(t *testing.T) {
	ensureApt(t, "direnv", "direnv")
	h := newHREnv(t)
	h.put(t, ".envrc", "for f in env.d/*.sh; do . \"$f\"; done\n", 0o644)
	h.put(t, "env.d/a.sh", "export A=1\n", 0o644)
	h.commitAll(t, "init")
	if out, err := h.owner(h.ws, "direnv", "allow", "."); err != nil {
		t.Fatalf("direnv allow: %v\n%s", err, out)
	}
	enter := func() { h.owner(h.ws, "direnv", "exec", h.ws, "true") }
	control := h.marker("control")
	h.put(t, "env.d/b.sh", "touch "+control+"\n", 0o644)
	enter()
	if !exists(control) {
		t.Fatal("control: direnv did not source env.d/b.sh; the test proves nothing")
	}
	must(t, os.Remove(filepath.Join(h.ws, "env.d/b.sh")))

	evil := h.marker("pwned")
	for _, rel := range []string{"env.d/a.sh", "env.d/evil.sh"} {
		h.plantByWrite(t, rel, "touch "+evil+"\n")
		if r := h.plantByShell(t, rel, "touch "+evil+"\n"); r.OK && !r.Reverted {
			t.Errorf("shell plant of %s was neither refused nor reverted: %+v", rel, r)
		}
	}
	enter()
	if exists(evil) {
		t.Fatal("direnv sourced what the agent planted in env.d")
	}
}
