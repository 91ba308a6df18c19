package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitConfigOf decodes the command-scope config in env, in order.
func gitConfigOf(t *testing.T, env map[string]string) [][2]string {
	t.Helper()
	n, err := strconv.Atoi(env["GIT_CONFIG_COUNT"])
	if err != nil {
		t.Fatalf("GIT_CONFIG_COUNT=%q", env["GIT_CONFIG_COUNT"])
	}
	var out [][2]string
	for i := 0; i < n; i++ {
		k, okK := env["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
		v, okV := env["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
		if !okK || !okV {
			t.Fatalf("entry %d of %d missing", i, n)
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("malformed %q", kv)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("duplicate %s", k)
		}
		m[k] = v
	}
	return m
}

// lastValue is what git sees for a single-valued key: the last entry.
func lastValue(cfg [][2]string, key string) (string, bool) {
	v, ok := "", false
	for _, kv := range cfg {
		if strings.EqualFold(kv[0], key) {
			v, ok = kv[1], true
		}
	}
	return v, ok
}

// Every key git lets a repository point at a program, and every variable
// that beats one, is in the environment of every command by default.
func TestEnvGitSafe(t *testing.T) {
	wantConfig := map[string]string{
		"core.fsmonitor":              "false",
		"core.hooksPath":              "/dev/null",
		"core.pager":                  "cat",
		"core.editor":                 "true",
		"sequence.editor":             "true",
		"core.sshCommand":             "ssh",
		"core.askPass":                "",
		"core.alternateRefsCommand":   "true",
		"credential.helper":           "",
		"repack.updateServerInfo":     "false",
		"gpg.program":                 "gpg",
		"gpg.openpgp.program":         "gpg",
		"gpg.x509.program":            "gpgsm",
		"gpg.ssh.program":             "ssh-keygen",
		"gpg.ssh.defaultKeyCommand":   "",
		"commit.gpgSign":              "false",
		"tag.gpgSign":                 "false",
		"interactive.diffFilter":      "cat",
		"help.autoCorrect":            "0",
		"help.format":                 "info",
		"help.browser":                gitNoTool,
		"web.browser":                 gitNoTool,
		"instaweb.browser":            gitNoTool,
		"browser.agentbox-none.cmd":   "false",
		"diff.tool":                   gitNoTool,
		"diff.guitool":                gitNoTool,
		"difftool.agentbox-none.cmd":  "false",
		"merge.tool":                  gitNoTool,
		"merge.guitool":               gitNoTool,
		"mergetool.agentbox-none.cmd": "false",
		"imap.tunnel":                 "false",
		"tar.tgz.command":             "gzip -cn",
		"tar.tar.gz.command":          "gzip -cn",
		"protocol.ext.allow":          "never",
		"safe.bareRepository":         "explicit",
	}
	wantVars := map[string]string{
		"GIT_PAGER": "cat", "GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true",
		"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
		"GIT_PROXY_COMMAND": "", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
	}
	host := map[string]string{
		"GIT_PAGER": "less", "GIT_ASKPASS": "/home/u/askpass", "GIT_CONFIG_PARAMETERS": "'core.hookspath'='.hooks'",
		"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "Ann",
		"GIT_CONFIG_KEY_1": "core.hooksPath", "GIT_CONFIG_VALUE_1": ".hooks",
	}
	getenv := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	passthrough := []string{"GIT_PAGER", "GIT_ASKPASS", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_CONFIG_KEY_1", "GIT_CONFIG_VALUE_1"}

	tests := []struct {
		name        string
		passthrough []string
		extra       []string
		callerCfg   [][2]string // expected ahead of ours, in order
	}{
		{name: "plain"},
		{name: "passthrough", passthrough: passthrough, callerCfg: [][2]string{{"user.name", "Ann"}, {"core.hooksPath", ".hooks"}}},
		{name: "extra", extra: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.email", "GIT_CONFIG_VALUE_0=a@b", "GIT_EDITOR=vi", "GIT_ALLOW_PROTOCOL=ext"}, callerCfg: [][2]string{{"user.email", "a@b"}}},
		{name: "extra count lies", extra: []string{"GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_0=user.email", "GIT_CONFIG_VALUE_0=a@b", "GIT_CONFIG_KEY_2=x.y"}, callerCfg: [][2]string{{"user.email", "a@b"}}},
		{name: "extra count junk", extra: []string{"GIT_CONFIG_COUNT=x", "GIT_CONFIG_KEY_0=user.email", "GIT_CONFIG_VALUE_0=a@b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := envMap(t, Env("", tt.passthrough, getenv, tt.extra))
			for k, v := range wantVars {
				if got, ok := m[k]; !ok || got != v {
					t.Errorf("%s=%q (set %v), want %q", k, got, ok, v)
				}
			}
			if _, ok := m["GIT_CONFIG_PARAMETERS"]; ok {
				t.Error("GIT_CONFIG_PARAMETERS kept: it is read after GIT_CONFIG_COUNT and would beat the overrides")
			}
			cfg := gitConfigOf(t, m)
			if len(cfg) != len(tt.callerCfg)+len(gitSafeConfig) {
				t.Fatalf("%d entries, want %d caller + %d: %v", len(cfg), len(tt.callerCfg), len(gitSafeConfig), cfg)
			}
			for i, kv := range tt.callerCfg {
				if cfg[i] != kv {
					t.Errorf("entry %d = %v, want the caller's %v first", i, cfg[i], kv)
				}
			}
			for k, v := range wantConfig {
				if got, ok := lastValue(cfg, k); !ok || got != v {
					t.Errorf("git sees %s=%q (set %v), want %q", k, got, ok, v)
				}
			}
			if n := strings.Count(strings.Join(Env("", nil, nil, nil), "\n"), "GIT_CONFIG_KEY_"); n != len(wantConfig) {
				t.Errorf("%d overrides in the table, %d checked here: keep the test's list complete", n, len(wantConfig))
			}
		})
	}
}

// WithGitSafeConfig(false) (sandbox.git_safe_config: false) leaves the
// overrides out and keeps the base environment and the caller's entries.
func TestEnvGitSafeOff(t *testing.T) {
	m := envMap(t, Env("", nil, nil, []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ann"}, WithGitSafeConfig(false)))
	for _, k := range []string{"GIT_ALLOW_PROTOCOL", "GIT_CONFIG_NOSYSTEM", "GIT_PROXY_COMMAND", "GIT_ASKPASS", "GIT_CONFIG_KEY_1"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s set with the overrides off", k)
		}
	}
	if m["GIT_CONFIG_COUNT"] != "1" || m["GIT_CONFIG_KEY_0"] != "user.name" || m["GIT_PAGER"] != "cat" || m["GIT_EDITOR"] != "true" {
		t.Errorf("base or caller entries lost: %v", m)
	}
	on := envMap(t, Env("", nil, nil, nil, WithGitSafeConfig(false), WithGitSafeConfig(true)))
	if on["GIT_ALLOW_PROTOCOL"] == "" {
		t.Error("the last option must win")
	}
}

// The real git agrees: for each overridden key, a hostile repository
// config loses to the environment.
func TestGitSafeEnvBeatsRepoConfig(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		return string(out), err
	}
	hostEnv := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
	if _, err := run(hostEnv, "init", "-q", "."); err != nil {
		t.Fatal(err)
	}
	var hostile strings.Builder
	for _, c := range gitSafeConfig {
		sec, key, _ := strings.Cut(c.key, ".")
		sub, name := "", key
		if i := strings.LastIndex(key, "."); i >= 0 {
			sub, name = key[:i], key[i+1:]
		}
		if sub != "" {
			sec += " \"" + sub + "\""
		}
		hostile.WriteString("[" + sec + "]\n\t" + name + " = /evil/" + c.key + "\n")
	}
	hostile.WriteString("[include]\n\tpath = ../inc\n")
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(hostile.String())
	f.Close()
	must(t, os.WriteFile(filepath.Join(dir, "inc"), []byte("[core]\n\tfsmonitor = /evil/included\n"), 0o644))

	env := Env(os.Getenv("PATH"), nil, nil, []string{"HOME=" + dir})
	for _, c := range gitSafeConfig {
		got, err := run(env, "config", "--get", c.key)
		if err != nil || strings.TrimSuffix(got, "\n") != c.value {
			t.Errorf("git config --get %s = %q, %v; want %q", c.key, got, err, c.value)
		}
		if bad, _ := run(hostEnv, "config", "--get", c.key); !strings.HasPrefix(bad, "/evil/") && c.key != "core.fsmonitor" {
			t.Errorf("control: without the overrides git sees %s=%q, want the hostile value", c.key, bad)
		}
	}
	// Credential helpers accumulate; the empty one clears the list,
	// URL-specific entries included.
	fill := func(env []string) {
		cmd := exec.Command(git, "credential", "fill")
		cmd.Dir, cmd.Env = dir, append(env, "GIT_TERMINAL_PROMPT=0")
		cmd.Stdin = strings.NewReader("protocol=https\nhost=example.com\n\n")
		cmd.Run()
	}
	mark := filepath.Join(dir, "helper-ran")
	if _, err := run(hostEnv, "config", "--add", "credential.https://example.com.helper", "!touch "+mark+"; false"); err != nil {
		t.Fatal(err)
	}
	fill(env)
	if _, err := os.Stat(mark); err == nil {
		t.Error("a repository's credential.<url>.helper ran under the overrides")
	}
	fill(hostEnv)
	if _, err := os.Stat(mark); err != nil {
		t.Error("control: the planted helper did not run without the overrides")
	}
	for v, want := range map[string]string{"GIT_PAGER": "cat", "GIT_EDITOR": "true"} {
		got, err := run(env, "var", v)
		if err != nil || strings.TrimSpace(got) != want {
			t.Errorf("git var %s = %q, %v", v, got, err)
		}
	}
}
