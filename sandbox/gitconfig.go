package sandbox

import (
	"strconv"
	"strings"
)

// Git in the sandbox works on repositories the agent can write: the
// workspace's .git (objects, refs and index stay writable so that an
// approved commit works, and whatever .git/config includes), nested
// repositories and submodules (entirely writable). Any git configuration
// key that names a program would let the agent make the next git run, even
// one proven read-only, execute code it planted. GitSafeEnv neutralises
// every such key git allows to be neutralised from the environment; the
// rest is listed below under "Not neutralisable".
//
// How: git reads configuration in the order system, global, repository,
// worktree, then the command scope, where GIT_CONFIG_COUNT/KEY_n/VALUE_n
// (git >= 2.31) live. For a single-valued key the last value read wins, so
// the entries below beat anything in a repository's config or in a file it
// includes. A few keys are read by their own rules and are handled by the
// environment variables that take precedence over them (GIT_PAGER over
// core.pager and pager.<cmd>, GIT_PROXY_COMMAND over core.gitProxy,
// GIT_ALLOW_PROTOCOL over every protocol.* and remote helper).
//
// Not neutralisable with environment alone (git 2.39; the integration test
// integration/git_hardening_test.go verifies each of these still runs):
//   - per-name keys whose name the repository chooses: diff.<driver>.command
//     and .textconv (git diff, git log -p, git show, git blame),
//     filter.<driver>.clean/.smudge/.process (git add, git checkout, and
//     git status when it re-hashes a file), merge.<driver>.driver,
//     remote.<name>.uploadpack/.receivepack, submodule.<name>.update=!cmd,
//     trailer.<token>.command/.cmd, tar.<format>.command for formats other
//     than tgz and tar.gz, and `!` aliases (alias.*: only for names that are
//     not git commands; git never lets an alias shadow one). Command-scope
//     config can only set names it knows, and git has no switch to ignore
//     repository config or the attributes that select a driver.
//   - diff.external: an empty value makes git run "" and fail every diff,
//     and GIT_EXTERNAL_DIFF cannot say "none" either.
//   - receive-side hooks and config of a local repository pushed to: git
//     clears GIT_CONFIG_COUNT for the upload-pack/receive-pack it starts on
//     another repository (local_repo_env).
//
// These are safe only where the configuration that defines them cannot be
// written by the agent: the workspace's .git/config and .git/hooks are
// mounted read-only, and new or changed configuration of nested
// repositories (.git/config, .git/modules/*/config and hooks,
// .git/config.worktree, and files an include points at) must be caught by
// the changeset check.
//
// Left alone on purpose: safe.directory (the sandbox runs as the owner, and
// "*" would only loosen), core.worktree (names a directory, and submodules
// need it), uploadpack.packObjectsHook (git reads it only from protected
// config; setting it would enable a hook), GIT_CONFIG_GLOBAL (HOME is a
// fresh tmpfs, so the global file is empty unless the command writes it),
// GIT_PROTOCOL_FROM_USER (GIT_ALLOW_PROTOCOL supersedes it). Costs:
// `git CMD --help` fails unless "info" is installed (man CMD works),
// `cd .git && git ...` needs --git-dir (safe.bareRepository), and local
// clones of submodules are allowed (protocol "file" is listed).

// gitSafeConfig is set in the command scope of every git run. Values are
// either "off" or git's own default program, so normal use keeps working.
var gitSafeConfig = [...]struct{ key, value string }{
	// Run by status, diff, add, commit, ... (the fsmonitor hook).
	{"core.fsmonitor", "false"},
	// No hook runs: not those in .git/hooks, not a planted hooksPath.
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "true"},
	{"sequence.editor", "true"},
	{"core.sshCommand", "ssh"},
	{"core.askPass", ""},
	// Only an optimisation: no alternate refs are advertised.
	{"core.alternateRefsCommand", "true"},
	// An empty helper clears the list, credential.<url>.helper included.
	{"credential.helper", ""},
	// Not a program: .git/info is read-only in the sandbox, and repack
	// (git gc) would otherwise fail writing info/refs, which only dumb
	// HTTP serving reads.
	{"repack.updateServerInfo", "false"},
	// Signing and verification use the standard programs (signing fails
	// anyway without the owner's keys, so it is turned off and commits
	// in repositories that sign still work).
	{"gpg.program", "gpg"},
	{"gpg.openpgp.program", "gpg"},
	{"gpg.x509.program", "gpgsm"},
	{"gpg.ssh.program", "ssh-keygen"},
	{"gpg.ssh.defaultKeyCommand", ""},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	// git add -p pipes its diff through this when colour is on.
	{"interactive.diffFilter", "cat"},
	// Never run a guessed command (it may be an alias).
	{"help.autoCorrect", "0"},
	// The man viewer list (man.viewer, man.<tool>.cmd) cannot be reset, so
	// `git CMD --help` asks for info, which runs only "info" from PATH.
	{"help.format", "info"},
	// Browsers, diff and merge tools: a tool name of ours whose command
	// fails, instead of one the repository names.
	{"help.browser", gitNoTool},
	{"web.browser", gitNoTool},
	{"instaweb.browser", gitNoTool},
	{"browser." + gitNoTool + ".cmd", "false"},
	{"diff.tool", gitNoTool},
	{"diff.guitool", gitNoTool},
	{"difftool." + gitNoTool + ".cmd", "false"},
	{"merge.tool", gitNoTool},
	{"merge.guitool", gitNoTool},
	{"mergetool." + gitNoTool + ".cmd", "false"},
	{"imap.tunnel", "false"},
	// The two built-in compressed archive formats, with git's default.
	{"tar.tgz.command", "gzip -cn"},
	{"tar.tar.gz.command", "gzip -cn"},
	// ext:: runs a command (GIT_ALLOW_PROTOCOL already refuses it).
	{"protocol.ext.allow", "never"},
	// A bare repository planted in the tree is not used implicitly.
	{"safe.bareRepository", "explicit"},
}

// gitNoTool names the browser/diff/merge tool git is pointed at.
const gitNoTool = "agentbox-none"

// gitSafeVars are set (and win over passthrough and Spec.Env) with the
// command-scope config.
var gitSafeVars = [...]struct{ key, value string }{
	// Beat core.pager and pager.<cmd>; "cat" means no pager at all.
	{"GIT_PAGER", "cat"},
	{"GIT_EDITOR", "true"},
	{"GIT_SEQUENCE_EDITOR", "true"},
	{"GIT_TERMINAL_PROMPT", "0"},
	// Set and empty: no askpass program, whatever core.askPass says.
	{"GIT_ASKPASS", ""},
	{"SSH_ASKPASS", ""},
	// Set and empty: core.gitProxy is not consulted, no proxy runs.
	{"GIT_PROXY_COMMAND", ""},
	{"GIT_CONFIG_NOSYSTEM", "1"},
	// Overrides protocol.allow and every protocol.<name>.allow: no ext::,
	// no remote helper a repository names (remote.<name>.vcs, foo::url).
	{"GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh"},
}

// GitSafeEnv returns the KEY=VALUE entries [Env] adds to make git run no
// program named by configuration the agent can write (see the comment at
// the top of gitconfig.go for what it covers and what it cannot). The
// command-scope config comes as GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n numbered from 0; a caller adding its own entries (say
// user.name) gives them to Env in [Spec].Env the same way, and Env puts them
// before these. It returns a new slice on each call; safe for concurrent
// use.
func GitSafeEnv() []string {
	out := make([]string, 0, len(gitSafeVars)+1+2*len(gitSafeConfig))
	for _, v := range gitSafeVars {
		out = append(out, v.key+"="+v.value)
	}
	out = append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(len(gitSafeConfig)))
	for i, c := range gitSafeConfig {
		n := strconv.Itoa(i)
		out = append(out, "GIT_CONFIG_KEY_"+n+"="+c.key, "GIT_CONFIG_VALUE_"+n+"="+c.value)
	}
	return out
}

// applyGitSafe rewrites env (a key → value map) so that GitSafeEnv wins:
// its variables replace any set before; command-scope entries set before
// (from passthrough or Spec.Env) are kept and renumbered ahead of ours, so
// ours win for the same key; GIT_CONFIG_PARAMETERS (git -c, read after
// GIT_CONFIG_COUNT) is dropped because it would beat them.
func applyGitSafe(m map[string]string) {
	var kept [][2]string
	if n, err := strconv.Atoi(m["GIT_CONFIG_COUNT"]); err == nil && n > 0 {
		for i := 0; i < n && i < 1000; i++ {
			k, okK := m["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			v, okV := m["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
			if okK && okV && k != "" {
				kept = append(kept, [2]string{k, v})
			}
		}
	}
	for k := range m {
		if k == "GIT_CONFIG_COUNT" || k == "GIT_CONFIG_PARAMETERS" ||
			strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			delete(m, k)
		}
	}
	for _, v := range gitSafeVars {
		m[v.key] = v.value
	}
	for _, c := range gitSafeConfig {
		kept = append(kept, [2]string{c.key, c.value})
	}
	m["GIT_CONFIG_COUNT"] = strconv.Itoa(len(kept))
	for i, kv := range kept {
		n := strconv.Itoa(i)
		m["GIT_CONFIG_KEY_"+n] = kv[0]
		m["GIT_CONFIG_VALUE_"+n] = kv[1]
	}
}
