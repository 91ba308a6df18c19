//go:build integration

package integration

import (
	"archive/zip"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// toolchainEnv is a workspace and a home of the workspace owner (uid
// wsUID) with the runner pointed at that home.
type toolchainEnv struct {
	ws, home string
	cfg      *config.Config
}

func newToolchainEnv(t *testing.T) toolchainEnv {
	t.Helper()
	ensureHostImage(t)
	ws := newWorkspace(t)
	home := filepath.Join(filepath.Dir(ws), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	return toolchainEnv{ws: ws, home: home, cfg: cfg}
}

// runner opens a runner with the host image's mounts and the test home.
func (e toolchainEnv) runner(t *testing.T) *docker.Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	r, err := docker.New(ctx, cli, e.cfg, log, docker.WithOwnerHome(e.home))
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.Close(ctx)
	})
	return r
}

func (e toolchainEnv) write(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// host runs a command on the host (as root) in dir.
func host(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func shell(t *testing.T, r sandbox.Runner, script string) sandbox.Result {
	t.Helper()
	res, err := runIn(t, r, sandbox.Spec{Shell: script, Timeout: 4 * time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res
}

func TestToolchainGitCommitAsOwner(t *testing.T) {
	e := newToolchainEnv(t)
	if err := os.WriteFile(filepath.Join(e.home, ".gitconfig"),
		[]byte("[user]\n\tname = Ada Owner\n\temail = ada@owner.example\n[credential]\n\thelper = store\n[alias]\n\tci = !touch /tmp/pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.write(t, "a.txt", "hello\n")
	host(t, e.ws, nil, "git", "init", "-q")
	chownWS(t, e.ws)
	r := e.runner(t)
	res := shell(t, r, "git add a.txt && git commit -q -m msg && git log -1 --format='%an <%ae>|%cn <%ce>'")
	if res.ExitCode != 0 {
		t.Fatalf("git commit exited %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got, want := strings.TrimSpace(string(res.Stdout)), "Ada Owner <ada@owner.example>|Ada Owner <ada@owner.example>"; got != want {
		t.Fatalf("commit identity %q, want %q", got, want)
	}
	// Only the identity came along: no credential helper, no alias.
	res = shell(t, r, "git config --get credential.helper; git config --get alias.ci; env | grep -c '^GIT_CONFIG_GLOBAL=' ; true")
	if strings.Contains(string(res.Stdout), "store") || strings.Contains(string(res.Stdout), "pwned") {
		t.Fatalf("the owner's git config leaked: %s", res.Stdout)
	}
	// A repository's own identity wins over the owner's global one.
	host(t, e.ws, nil, "git", "config", "--file", ".git/config", "user.name", "Repo Person")
	res = shell(t, r, "echo b > b.txt && git add b.txt && git commit -q -m two && git log -1 --format='%an <%ae>'")
	if got, want := strings.TrimSpace(string(res.Stdout)), "Repo Person <ada@owner.example>"; got != want {
		t.Fatalf("with a repository user.name: %q, want %q (%s)", got, want, res.Stderr)
	}
}

// fakeModule writes a module proxy directory holding example.com/dep
// v1.0.0, for `go mod download` with GOPROXY=file://.
func fakeModule(t *testing.T, dir string) {
	t.Helper()
	v := filepath.Join(dir, "example.com", "dep", "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/dep\n\ngo 1.21\n"
	files := map[string]string{
		"list":        "v1.0.0\n",
		"v1.0.0.info": `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`,
		"v1.0.0.mod":  mod,
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(v, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(v, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for n, s := range map[string]string{
		"go.mod": mod,
		"dep.go": "package dep\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n",
	} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(s))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestToolchainGoTestOfflineFromHostModuleCache(t *testing.T) {
	e := newToolchainEnv(t)
	proxy := filepath.Join(filepath.Dir(e.ws), "proxy")
	fakeModule(t, proxy)
	modcache := filepath.Join(e.home, "go", "pkg", "mod")
	e.write(t, "go.mod", "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	e.write(t, "app.go", "package app\n\nimport \"example.com/dep\"\n\nfunc Twice() int { return 2 * dep.Answer() }\n")
	e.write(t, "app_test.go", "package app\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice() != 84 {\n\t\tt.Fatal(Twice())\n\t}\n}\n")
	// The dependency reaches the owner's module cache the way it does on a
	// developer's machine: downloaded on the host (here from a local proxy).
	host(t, e.ws, []string{"GOMODCACHE=" + modcache, "GOPROXY=file://" + proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod"}, "go", "mod", "download", "all")
	host(t, e.ws, []string{"GOMODCACHE=" + modcache, "GOPROXY=file://" + proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod"}, "go", "mod", "tidy")
	chownWS(t, e.home)
	chownWS(t, e.ws)
	// Credentials beside the caches must stay out.
	must(t, os.MkdirAll(filepath.Join(e.home, ".cargo", "registry"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, ".cargo", "credentials.toml"), []byte("token = \"secret\"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(e.home, ".npmrc"), []byte("//registry/:_authToken=secret\n"), 0o600))
	chownWS(t, e.home)

	r := e.runner(t)
	res := shell(t, r, "go test ./... 2>&1")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "ok") {
		t.Fatalf("go test exited %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if strings.Contains(string(res.Stdout), "(cached)") {
		t.Fatalf("first run already cached:\n%s", res.Stdout)
	}
	res = shell(t, r, "go test ./... 2>&1")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "(cached)") {
		t.Fatalf("second go test is not a cache hit (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// Read-only dependency cache, writable build cache, no credentials.
	res = shell(t, r, `set -u
touch "$GOMODCACHE/x" 2>/dev/null && echo modcache-writable
touch "$GOCACHE/probe" || echo gocache-readonly
test -d `+e.home+`/.cargo/registry || echo no-registry
test -e `+e.home+`/.cargo/credentials.toml && echo credentials-visible
test -e `+e.home+`/.npmrc && echo npmrc-visible
test "$GOPROXY" = off || echo goproxy-$GOPROXY
true`)
	if out := strings.TrimSpace(string(res.Stdout) + string(res.Stderr)); out != "" {
		t.Fatalf("cache mounts wrong: %s", out)
	}
	// The build cache lives in the state dir, owned by the workspace owner.
	fi, err := os.Stat(filepath.Join(e.cfg.WorkspaceStateDir(), docker.BuildCacheSubdir, "go-build"))
	if err != nil {
		t.Fatalf("build cache not in the state dir: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != wsUID {
		t.Fatalf("build cache entries belong to uid %d, want %d", st.Uid, wsUID)
	}
}

func TestToolchainNodeAndPython(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is not installed on this host: %v", err)
	}
	e := newToolchainEnv(t)
	e.write(t, "package.json", `{"name":"t","version":"1.0.0","private":true,"scripts":{"test":"node test.js"},"dependencies":{"is-number":"7.0.0"}}`)
	e.write(t, "test.js", "const isNumber = require('is-number');\nif (!isNumber(5) || isNumber('x')) { console.error('wrong'); process.exit(1); }\nconsole.log('node ok');\n")
	host(t, e.ws, []string{"npm_config_cache=" + filepath.Join(filepath.Dir(e.ws), "npmcache")}, "npm", "install", "--no-audit", "--no-fund")
	e.write(t, "test_calc.py", "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n\nif __name__ == '__main__':\n    unittest.main()\n")
	chownWS(t, e.ws)
	r := e.runner(t)
	res := shell(t, r, "npm test 2>&1")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "node ok") {
		t.Fatalf("npm test exited %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = shell(t, r, "python3 -m unittest 2>&1")
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "OK") || !strings.Contains(string(res.Stdout), "Ran 1 test") {
		t.Fatalf("python3 -m unittest exited %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}
