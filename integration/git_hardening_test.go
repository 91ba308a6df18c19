//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
)

// gitAttack plants configuration that names a program and runs the git
// command that would start it. MARK in config, setup and trigger is the
// path of a program that leaves a marker file when run.
type gitAttack struct {
	name    string
	config  string // appended to the repository's config after setup
	setup   string // shell, in the repository, before config is planted
	trigger string // shell, in the repository; must be repeatable
	// gap, when set, says why the environment cannot neutralise this
	// key: the test then requires the program to run anyway, so that
	// the list in sandbox/gitconfig.go stays true.
	gap string
	// hostRisk: the host user's own `git status; git log -p; git diff`
	// in the agent's nested repository runs the planted program.
	hostRisk bool
}

const (
	gapPerName  = "per-name key: command-scope config can only override names it knows"
	gapExternal = "diff.external: an empty value runs \"\" and breaks every diff; GIT_EXTERNAL_DIFF cannot say none"
	gapLocalRep = "git clears GIT_CONFIG_COUNT for upload-pack/receive-pack on a local repository (local_repo_env)"
	gapAlias    = "alias.*: per-name (git never lets an alias shadow a git command, so only unknown subcommands)"
)

// httpAuthServer answers every request on 127.0.0.1:18765 with 401, so
// that git asks for credentials. The fetch names it in no_proxy: the
// server is on the container's own loopback, not behind the egress proxy
// the sandbox's environment points every tool at.
const httpAuthServer = `perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(LocalAddr=>"127.0.0.1:18765",Listen=>5,ReuseAddr=>1) or die; while($c=$s->accept){ while(<$c>){ last if /^\r?$/ } print $c "HTTP/1.0 401 Unauthorized\r\nWWW-Authenticate: Basic realm=x\r\nContent-Length: 0\r\n\r\n"; close $c }' & sleep 0.5; `

const twoBranches = `git checkout -qb b; echo b > f.txt; git commit -qam b; git checkout -q -; echo c > f.txt; git commit -qam c; git tag c0; `

var gitAttacks = []gitAttack{
	{name: "fsmonitor", config: "[core]\n\tfsmonitor = MARK", trigger: "git status", hostRisk: true},
	{name: "hook", setup: "printf '#!/bin/sh\\nMARK\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "post-index-change-hook", setup: "printf '#!/bin/sh\\nMARK\\n' > .git/hooks/post-index-change; chmod +x .git/hooks/post-index-change", trigger: "touch f.txt; git status", hostRisk: true},
	{name: "hooksPath", config: "[core]\n\thooksPath = hk", setup: "mkdir hk; printf '#!/bin/sh\\nMARK\\n' > hk/pre-commit; chmod +x hk/pre-commit", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "pager", config: "[core]\n\tpager = MARK", trigger: "script -qec 'git log' /dev/null"},
	{name: "pager.cmd", config: "[pager]\n\tlog = MARK", trigger: "script -qec 'git log' /dev/null"},
	{name: "editor", config: "[core]\n\teditor = MARK", trigger: "echo x >> f.txt; git commit -qa"},
	{name: "sequence.editor", config: "[sequence]\n\teditor = MARK", trigger: "echo x >> f.txt; git commit -qam y; git rebase -i HEAD~1"},
	{name: "diff.external", config: "[diff]\n\texternal = MARK", trigger: "echo x >> f.txt; git diff", gap: gapExternal, hostRisk: true},
	{name: "diff.driver.command", config: "[diff \"e\"]\n\tcommand = MARK", setup: "echo '*.txt diff=e' > .gitattributes", trigger: "echo x >> f.txt; git diff", gap: gapPerName, hostRisk: true},
	{name: "diff.driver.textconv", config: "[diff \"e\"]\n\ttextconv = MARK", setup: "echo '*.txt diff=e' > .gitattributes", trigger: "echo x >> f.txt; git diff", gap: gapPerName, hostRisk: true},
	{name: "diff.driver.textconv-log", config: "[diff \"e\"]\n\ttextconv = MARK", setup: "echo '*.txt diff=e' > .gitattributes; git add .gitattributes; echo x >> f.txt; git commit -qam t", trigger: "git log -p", gap: gapPerName, hostRisk: true},
	{name: "filter.clean-add", config: "[filter \"e\"]\n\tclean = MARK", setup: "echo '*.txt filter=e' > .gitattributes", trigger: "echo x >> f.txt; git add f.txt", gap: gapPerName, hostRisk: true},
	{name: "filter.clean-status", config: "[filter \"e\"]\n\tclean = MARK", setup: "echo '*.txt filter=e' > .gitattributes; git add .gitattributes", trigger: "touch -d 2000-01-01 f.txt; git status", gap: gapPerName, hostRisk: true},
	{name: "filter.smudge", config: "[filter \"e\"]\n\tsmudge = MARK", setup: "echo '*.txt filter=e' > .gitattributes", trigger: "rm -f f.txt; git checkout f.txt", gap: gapPerName},
	{name: "filter.process", config: "[filter \"e\"]\n\tprocess = MARK", setup: "echo '*.txt filter=e' > .gitattributes", trigger: "echo x >> f.txt; git add f.txt", gap: gapPerName, hostRisk: true},
	{name: "merge.driver", config: "[merge \"e\"]\n\tdriver = MARK", setup: "echo '*.txt merge=e' > .gitattributes; git add .gitattributes; git commit -qm a; " + twoBranches, trigger: "git merge --abort 2>/dev/null; git reset -q --hard c0 && git merge b", gap: gapPerName},
	{name: "gpg.program", config: "[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = MARK", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "gpg.x509.program", config: "[commit]\n\tgpgSign = true\n[gpg]\n\tformat = x509\n[gpg \"x509\"]\n\tprogram = MARK", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "gpg.ssh.program", config: "[commit]\n\tgpgSign = true\n[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tprogram = MARK\n[user]\n\tsigningKey = key::ssh-ed25519 AAAA", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "gpg.ssh.defaultKeyCommand", config: "[commit]\n\tgpgSign = true\n[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tdefaultKeyCommand = MARK", trigger: "echo x >> f.txt; git commit -qam y"},
	{name: "gpg.verify-log", config: "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = MARK",
		setup:   `c=$(git cat-file commit HEAD | sed '/^committer/a gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----' | git hash-object -t commit -w --stdin) && git update-ref HEAD $c`,
		trigger: "git log", hostRisk: true},
	{name: "alias", config: "[alias]\n\tzzfoo = !MARK", trigger: "git zzfoo", gap: gapAlias},
	{name: "help.autoCorrect", config: "[help]\n\tautoCorrect = immediate\n[alias]\n\tzzfoo = !MARK", trigger: "git zzfo"},
	{name: "man.viewer", config: "[man]\n\tviewer = e\n[man \"e\"]\n\tcmd = MARK", trigger: "git log --help"},
	{name: "web.browser", config: "[web]\n\tbrowser = e\n[browser \"e\"]\n\tcmd = MARK", trigger: "git web--browse http://example.invalid/"},
	{name: "core.sshCommand", config: "[core]\n\tsshCommand = MARK", trigger: "git fetch ssh://h.invalid/x"},
	{name: "core.askPass", config: "[core]\n\taskPass = MARK", trigger: httpAuthServer + "no_proxy=127.0.0.1 git fetch http://127.0.0.1:18765/x; kill %1"},
	{name: "credential.helper", config: "[credential]\n\thelper = !MARK", trigger: httpAuthServer + "no_proxy=127.0.0.1 git fetch http://127.0.0.1:18765/x; kill %1"},
	{name: "credential.url.helper", config: "[credential \"http://127.0.0.1:18765\"]\n\thelper = !MARK", trigger: httpAuthServer + "no_proxy=127.0.0.1 git fetch http://127.0.0.1:18765/x; kill %1"},
	{name: "core.gitProxy", config: "[core]\n\tgitProxy = MARK", trigger: "git fetch git://h.invalid/x"},
	{name: "ext-transport", config: "[protocol \"ext\"]\n\tallow = always", trigger: "git fetch ext::MARK"},
	{name: "url.insteadOf-ext", config: "[url \"ext::MARK \"]\n\tinsteadOf = https://h.invalid/\n[protocol \"ext\"]\n\tallow = always", trigger: "git fetch https://h.invalid/y"},
	{name: "remote.vcs", config: "[remote \"o\"]\n\tvcs = ext\n\turl = MARK\n[protocol \"ext\"]\n\tallow = always", trigger: "git fetch o"},
	{name: "remote.uploadpack", config: "[remote \"o\"]\n\turl = .\n\tuploadpack = MARK", trigger: "git fetch o", gap: gapPerName},
	{name: "remote.receivepack", config: "[remote \"o\"]\n\turl = .bare\n\treceivepack = MARK", setup: "git init -q --bare .bare", trigger: "git push o HEAD:refs/heads/x$RANDOM$RANDOM", gap: gapPerName},
	{name: "local-push-hook", setup: "git init -q --bare .bare; printf '#!/bin/sh\\nMARK\\n' > .bare/hooks/pre-receive; chmod +x .bare/hooks/pre-receive", trigger: "git push -q .bare HEAD:refs/heads/x$RANDOM$RANDOM", gap: gapLocalRep},
	{name: "core.alternateRefsCommand", config: "[core]\n\talternateRefsCommand = MARK", setup: "git clone -q --bare . .alt; echo $PWD/.alt/objects > .git/objects/info/alternates; git clone -q . .src; (cd .src && echo n > n && git add n && git commit -qm n)", trigger: "git fetch -q .src HEAD:refs/x$RANDOM$RANDOM"},
	{name: "interactive.diffFilter", config: "[interactive]\n\tdiffFilter = MARK\n[color]\n\tui = always", trigger: "echo x >> f.txt; TERM=xterm script -qec 'echo q | git add -p' /dev/null"},
	{name: "difftool.cmd", config: "[diff]\n\ttool = e\n[difftool \"e\"]\n\tcmd = MARK", trigger: "echo x >> f.txt; git difftool -y"},
	{name: "difftool.path", config: "[diff]\n\ttool = vimdiff\n[difftool \"vimdiff\"]\n\tpath = MARK", trigger: "echo x >> f.txt; git difftool -y"},
	{name: "mergetool.cmd", config: "[merge]\n\ttool = e\n[mergetool \"e\"]\n\tcmd = MARK", setup: twoBranches + "git merge b || true", trigger: "git mergetool"},
	{name: "imap.tunnel", config: "[imap]\n\ttunnel = MARK\n\tfolder = x", trigger: "git format-patch -1 --stdout | git imap-send"},
	{name: "trailer.command", config: "[trailer \"t\"]\n\tcommand = MARK", trigger: "echo msg | git interpret-trailers", gap: gapPerName},
	{name: "tar.tgz.command", config: "[tar \"tgz\"]\n\tcommand = MARK", trigger: "git archive --format=tgz HEAD > /dev/null"},
	{name: "tar.custom.command", config: "[tar \"e\"]\n\tcommand = MARK", trigger: "git archive --format=e HEAD > /dev/null", gap: gapPerName},
	{name: "submodule.update", config: "[submodule \"s\"]\n\tupdate = !MARK",
		setup:   "git clone -q . .src; git submodule add -q \"$PWD/.src\" s; git commit -qm s; (cd s && echo y > y && git add y && git commit -qm y); git submodule deinit -qf s; git submodule init -q s",
		trigger: "git submodule update s", gap: gapPerName},
	{name: "submodule-fsmonitor", setup: "git clone -q . .src; git submodule add -q \"$PWD/.src\" s; git commit -qm s; printf '[core]\\n\\tfsmonitor = MARK\\n' >> .git/modules/s/config", trigger: "git status", hostRisk: true},
	{name: "include.path", config: "[include]\n\tpath = ../inc.cfg", setup: "printf '[core]\\n\\tfsmonitor = MARK\\n' > inc.cfg", trigger: "git status", hostRisk: true},
	{name: "includeIf", config: "[includeIf \"gitdir:/\"]\n\tpath = ../inc.cfg", setup: "printf '[core]\\n\\tfsmonitor = MARK\\n' > inc.cfg", trigger: "git status", hostRisk: true},
	{name: "config.worktree", config: "[extensions]\n\tworktreeConfig = true\n[core]\n\trepositoryformatversion = 1", setup: "printf '[core]\\n\\tfsmonitor = MARK\\n' > .git/config.worktree", trigger: "git status", hostRisk: true},
	{name: "bare-repo-in-tree", setup: "mkdir b; cd b; git init -q --bare .; printf '[core]\\n\\tfsmonitor = MARK\\n\\tbare = false\\n\\tworktree = ..\\n' >> config", trigger: "cd b && git status"},
}

// gitIdentity is what an approved commit gets in the tests.
var gitIdentity = []string{"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.invalid", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.invalid"}

// unsetGitSafe is a shell prefix that removes the overrides again: the
// control run, which must start the planted program.
func unsetGitSafe() string {
	var names []string
	for _, kv := range sandbox.GitSafeEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "GIT_TERMINAL_PROMPT" && !strings.HasPrefix(k, "GIT_CONFIG_KEY_") && !strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			names = append(names, k)
		}
	}
	return "unset " + strings.Join(names, " ") + "; "
}

const initRepo = "git init -q . && echo one > f.txt && echo bin > f.bin && git add -A && git commit -qm init"

// TestGitHardening plants each program-running key twice: in the
// workspace's own .git/config, written on the host before the run (read-only
// in the sandbox), and in a nested repository sub/ the command itself
// creates. The git command that would start the program runs in the
// sandbox with the overrides (no marker may appear) and again with them
// removed (the marker must appear: the attack is real). Afterwards the
// host user's own git status/log/diff runs in sub/ to show what remains
// for the changeset check to revert.
func TestGitHardening(t *testing.T) {
	ensureHostImage(t)
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) { testGitAttack(t, a) })
	}
}

func testGitAttack(t *testing.T, a gitAttack) {
	ws := newWorkspace(t)
	marks := filepath.Join(ws, ".marks")
	bin := filepath.Join(ws, ".x")
	for _, d := range []string{marks, bin} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	prog := func(variant string) string {
		p := filepath.Join(bin, variant)
		script := fmt.Sprintf("#!/bin/sh\ntouch %s\nexit 0\n", filepath.Join(marks, variant))
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	marked := func(variant string) bool {
		_, err := os.Stat(filepath.Join(marks, variant))
		return err == nil
	}
	clear := func(variant string) { os.Remove(filepath.Join(marks, variant)) }
	wsProg, subProg := prog("ws"), prog("sub")
	sub := strings.NewReplacer("MARK", subProg)
	wsr := strings.NewReplacer("MARK", wsProg)

	// The workspace's repository, set up and configured on the host (as
	// the owner would have it) with the overrides, so setup runs nothing.
	hostSh(t, ws, true, initRepo+" && "+orTrue(wsr.Replace(a.setup)))
	if a.config != "" {
		f, err := os.OpenFile(filepath.Join(ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(wsr.Replace(a.config) + "\n")
		f.Close()
	}
	if err := chownTree(ws, wsUID, wsGID); err != nil {
		t.Fatal(err)
	}
	if marked("ws") {
		t.Fatal("setup ran the program")
	}

	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	r := openRunner(t, cfg)
	run := func(dir, shell string) sandbox.Result {
		t.Helper()
		res, err := runIn(t, r, sandbox.Spec{Shell: shell, Workdir: dir, Env: gitIdentity})
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		return res
	}
	check := func(variant, dir, trigger string) {
		t.Helper()
		res := run(dir, trigger)
		if variant == "ws" && !marked(variant) && strings.Contains(string(res.Stderr), "Read-only file system") {
			// The workspace's .git behaviour files are read-only mounts:
			// the attack could not even be set up.
			t.Logf("%s: refused by the read-only .git mounts: %s", variant, strings.TrimSpace(string(res.Stderr)))
			return
		}
		switch ran := marked(variant); {
		case a.gap == "" && ran:
			t.Errorf("%s: the planted program ran under the overrides (exit %d)\nstdout: %s\nstderr: %s", variant, res.ExitCode, res.Stdout, res.Stderr)
		case a.gap != "" && !ran:
			t.Errorf("%s: documented as not neutralisable (%s) but did not run: update sandbox/gitconfig.go\nstderr: %s", variant, a.gap, res.Stderr)
		case a.gap != "":
			t.Logf("%s: runs despite the overrides (known): %s", variant, a.gap)
		}
		clear(variant)
		res = run(dir, unsetGitSafe()+trigger)
		if !marked(variant) {
			t.Errorf("%s: control without the overrides did not run the program either: the test proves nothing (exit %d)\nstdout: %s\nstderr: %s", variant, res.ExitCode, res.Stdout, res.Stderr)
		}
		clear(variant)
	}
	check("ws", ws, wsr.Replace(a.trigger))

	// A nested repository the command creates itself: every file of it,
	// config and hooks included, is the agent's.
	subDir := filepath.Join(ws, "sub")
	setup := "mkdir sub && cd sub && " + initRepo + " && " + orTrue(sub.Replace(a.setup))
	if a.config != "" {
		setup += "\ncat >> .git/config <<'AGENTBOX_EOF'\n" + sub.Replace(a.config) + "\nAGENTBOX_EOF\n"
	}
	if res := run(ws, setup); res.ExitCode != 0 {
		t.Fatalf("nested setup: exit %d\n%s", res.ExitCode, res.Stderr)
	}
	if marked("sub") {
		t.Fatal("nested setup ran the program")
	}
	check("sub", subDir, sub.Replace(a.trigger))

	// The host user later runs git in the agent's nested repository.
	hostSh(t, subDir, false, "git status; git log -p -1; git diff")
	if got := marked("sub"); got != a.hostRisk {
		t.Errorf("host git status/log/diff in the agent's nested repository ran the planted program: %v, documented %v", got, a.hostRisk)
	} else if got {
		t.Logf("host risk (for the changeset check to revert): the owner's git status/log/diff runs %s from sub/", a.name)
	}
}

// orTrue makes an empty setup a no-op and a failing one visible.
func orTrue(s string) string {
	if s == "" {
		return "true"
	}
	return "{ " + s + "\n}"
}

// hostSh runs shell in dir on the host as root (the repositories belong to
// the test uid, hence safe.directory), with the sandbox's git overrides
// when hardened, else as a host user's plain git would run.
func hostSh(t *testing.T, dir string, hardened bool, shell string) {
	t.Helper()
	home := t.TempDir()
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}, gitIdentity...)
	if hardened {
		env = sandbox.Env(os.Getenv("PATH"), nil, nil, append([]string{"HOME=" + home,
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
			"GIT_CONFIG_KEY_1=protocol.file.allow", "GIT_CONFIG_VALUE_1=always"}, gitIdentity...))
	} else {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	}
	cmd := exec.Command("bash", "-c", shell)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if hardened && err != nil {
		t.Fatalf("host: %s: %v\n%s", shell, err, out)
	}
}

func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// TestGitHardeningNormalUse: under the overrides, the everyday git an
// agent runs (and an approved commit) works in the real sandbox.
func TestGitHardeningNormalUse(t *testing.T) {
	ensureHostImage(t)
	ws := newWorkspace(t)
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	r := openRunner(t, cfg)

	res, err := runIn(t, r, sandbox.Spec{Argv: []string{"env"}})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	for _, kv := range sandbox.GitSafeEnv() {
		if !slices.Contains(env, kv) {
			t.Errorf("the sandbox's environment lacks %q", kv)
		}
	}

	res, err = runIn(t, r, sandbox.Spec{Shell: "echo hello > a.txt && git init -q && git add -A && git commit -qm x && git log --format=%an:%s", Env: gitIdentity})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "Agent:x\n" {
		t.Fatalf("git init/add/commit: exit %d stdout %q stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}

	steps := []struct{ name, shell, want string }{
		{"status", "echo more >> a.txt && git status --short", " M a.txt\n"},
		{"diff", "git diff --stat | tail -1", " 1 file changed, 1 insertion(+)\n"},
		{"stash", "git stash -q && git status --short && git stash pop -q && git status --short", " M a.txt\n"},
		{"commit -a", "git commit -qam more && git log --oneline | wc -l", "2\n"},
		{"rebase -i", "git rebase -q -i HEAD~1 && git log --oneline | wc -l", "2\n"},
		{"branch and checkout", "git checkout -qb topic && echo t > t.txt && git add t.txt && git commit -qm topic && git checkout -q - && git branch --show-current", "master\n"},
		{"merge", "echo m > m.txt && git add m.txt && git commit -qm m && git merge -q --no-edit topic && git log --oneline | wc -l", "5\n"},
		{"revert", "git revert --no-edit HEAD~1 >/dev/null && git log -1 --format=%s", "Revert \"m\"\n"},
		{"tag -a", "git tag -a v1 -m v1 && git tag", "v1\n"},
		{"log -p and show", "git log -p -1 --format=%s | head -1 && git show --stat --format=%s HEAD | head -1", "Revert \"m\"\nRevert \"m\"\n"},
		{"blame", "git blame --porcelain a.txt | grep -c '^author Agent'", "2\n"},
		{"local clone and submodule", "git clone -q . .clone && git submodule add -q \"$PWD/.clone\" sub && git commit -qm sub && git submodule status | wc -l", "1\n"},
		{"archive tgz", "git archive --format=tgz HEAD | gzip -t && echo ok", "ok\n"},
		{"commit without -m aborts (GIT_EDITOR=true)", "echo e >> a.txt && git commit -qa; echo $?", "1\n"},
		{"gc", "git gc -q && echo ok", "ok\n"},
		// Last: once .git/worktrees exists it is a read-only mount (it
		// decides what git runs), so later calls cannot write into it.
		{"worktree", "git worktree add -q --detach .wt && git -C .wt status --short | wc -l", "0\n"},
	}
	for _, s := range steps {
		res, err := runIn(t, r, sandbox.Spec{Shell: "set -o pipefail; " + s.shell, Env: gitIdentity})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Stdout) != s.want {
			t.Errorf("%s: exit %d stdout %q, want %q\nstderr: %s", s.name, res.ExitCode, res.Stdout, s.want, res.Stderr)
		}
	}
}

// TestRedteam2EnvUnsetGitOverrides: the sandbox sets GIT_CONFIG_COUNT/
// KEY/VALUE (core.fsmonitor=false, core.hooksPath=/dev/null, core.pager=cat,
// safe.bareRepository=explicit, …) and GIT_PAGER so that git, even in a
// command judged read-only, runs no program named by configuration.
// `unset GIT_CONFIG_COUNT; git log` and `GIT_CONFIG_COUNT=0 git status` are
// dangerous, but `env -u GIT_CONFIG_COUNT -u GIT_PAGER git log -p` was
// judged read_only: it runs git with none of the overrides (core.pager,
// core.fsmonitor, diff.external, safe.bareRepository back to the
// repository's say). Impact is limited by the read-only container (the
// program runs with the workspace read-only), but it is the exact thing
// gitconfig.go promises cannot happen.
//
// Fix (classifier): `env` with -u/--unset/-i/- of any variable the sandbox
// sets for safety (GIT_*, and simplest: any -u at all) is dangerous, like
// an assignment prefix; same for `env -C`/--chdir (already dangerous for
// -C, not for --chdir=).
func TestRedteam2EnvUnsetGitOverrides(t *testing.T) {
	cmds := []string{
		"env -u GIT_CONFIG_COUNT git status",
		"env --unset=GIT_CONFIG_COUNT git log -p",
		"env -u GIT_CONFIG_COUNT -u GIT_PAGER git log -p",
		"env -uGIT_CONFIG_COUNT git status",
	}
	for _, c := range cmds {
		out, err := exec.Command(agentbox, "classify", c).CombinedOutput()
		got := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		if err != nil && got == "" {
			t.Fatalf("classify %q: %v: %s", c, err, out)
		}
		if got == "read_only" {
			t.Errorf("%q is judged read_only: it drops the sandbox's git overrides", c)
		}
	}
}
