package docker

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

func TestToolchainMountsAndEnv(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, state := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "state")
	for _, d := range []string{ws + "/.git", home + "/go/pkg/mod", home + "/.cargo/registry", home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(home+"/.cargo/credentials.toml", []byte("token"), 0o600))
	must(t, os.WriteFile(home+"/.gitconfig", []byte("[user]\nname = Owner\nemail = owner@x\n"), 0o644))
	must(t, os.WriteFile(ws+"/.git/config", []byte("[core]\nbare = false\n"), 0o644))

	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = ws, state
	cfg.Sandbox.Caches = []string{"auto", home + "/.ssh"}
	r := testRunner(t, ws)
	r.log = slog.New(slog.DiscardHandler)
	if r.wsFD, err = openWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	defer r.wsFD.Close()
	if err := r.setupToolchains(&cfg, options{ownerHome: home, ownerHomeSet: true}); err != nil {
		t.Fatal(err)
	}
	for _, roContainer := range []bool{false, true} {
		srcs, err := r.sources(roContainer)
		closeSources(srcs)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{} // target -> read-only
		for _, s := range srcs {
			got[s.target] = s.ro
		}
		want := map[string]bool{home + "/go/pkg/mod": true, home + "/.cargo/registry": true, sandbox.BuildCacheDir: false}
		for target, wantRO := range want {
			if ro, ok := got[target]; !ok || ro != wantRO {
				t.Errorf("read-only container %v: %s mounted=%v ro=%v, want ro=%v", roContainer, target, ok, ro, wantRO)
			}
		}
		for target := range got {
			if strings.HasPrefix(target, home) && !slices.Contains([]string{home + "/go/pkg/mod", home + "/.cargo/registry"}, target) {
				t.Errorf("unexpected mount from the home: %s", target)
			}
		}
	}
	env := sandbox.Env(r.path, nil, nil, r.commandEnv([]string{"GOPROXY=direct"}))
	for _, kv := range []string{"GOMODCACHE=" + home + "/go/pkg/mod", "CARGO_HOME=" + sandbox.CargoHomeDir, "CARGO_NET_OFFLINE=true",
		"GOCACHE=" + sandbox.BuildCacheDir + "/go-build", "GIT_AUTHOR_NAME=Owner", "GIT_COMMITTER_EMAIL=owner@x", "GOPROXY=direct"} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s: %v", kv, env)
		}
	}
	link, err := os.Readlink(filepath.Join(cfg.WorkspaceStateDir(), BuildCacheSubdir, "cargo-home", "registry"))
	if err != nil || link != home+"/.cargo/registry" {
		t.Errorf("cargo-home/registry -> %q, %v", link, err)
	}
	if !slices.ContainsFunc(r.tc.Skipped, func(s sandbox.SkippedCache) bool { return s.Path == home+"/.ssh" }) {
		t.Errorf("a configured .ssh was not refused: %+v", r.tc.Skipped)
	}
	// The repository's own identity wins, key by key.
	must(t, os.WriteFile(ws+"/.git/config", []byte("[user]\n\tname = Repo\n"), 0o644))
	env = r.commandEnv(nil)
	if slices.Contains(env, "GIT_AUTHOR_NAME=Owner") || !slices.Contains(env, "GIT_AUTHOR_EMAIL=owner@x") {
		t.Errorf("repository identity not respected: %v", env)
	}
	// A FIFO in place of .git/config neither blocks nor counts.
	must(t, os.Remove(ws+"/.git/config"))
	if err := mkfifo(ws + "/.git/config"); err != nil {
		t.Fatal(err)
	}
	if env = r.commandEnv(nil); !slices.Contains(env, "GIT_AUTHOR_NAME=Owner") {
		t.Errorf("with a FIFO config: %v", env)
	}
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
