package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
)

func TestCandidatesOrder(t *testing.T) {
	state := "/var/lib/ab-state"
	priv := "unix://" + privatePaths(state).Socket
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	tests := []struct {
		name    string
		env     map[string]string
		euid    int
		cfgHost string
		exists  func(string) bool
		want    []string // host(source)
	}{
		{
			name:    "everything present, root",
			env:     map[string]string{"DOCKER_HOST": "tcp://10.0.0.1:2375"},
			cfgHost: "unix:///srv/docker.sock",
			exists:  all,
			want: []string{
				"tcp://10.0.0.1:2375(DOCKER_HOST)",
				"unix:///srv/docker.sock(config)",
				"unix:///var/run/docker.sock(default-socket)",
				"unix:///run/podman/podman.sock(podman)",
				priv + "(private)",
			},
		},
		{
			name:   "rootless user gets runtime dir sockets",
			env:    map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"},
			euid:   1000,
			exists: all,
			want: []string{
				"unix:///var/run/docker.sock(default-socket)",
				"unix:///run/podman/podman.sock(podman)",
				"unix:///run/user/1000/docker.sock(default-socket)",
				"unix:///run/user/1000/podman/podman.sock(podman)",
				priv + "(private)",
			},
		},
		{
			name:   "runtime dir derived from uid",
			euid:   1001,
			exists: func(p string) bool { return strings.HasPrefix(p, "/run/user/1001/podman") },
			want:   []string{"unix:///run/user/1001/podman/podman.sock(podman)"},
		},
		{
			name:   "missing sockets are skipped, DOCKER_HOST is kept",
			env:    map[string]string{"DOCKER_HOST": "unix:///nonexistent.sock"},
			exists: none,
			want:   []string{"unix:///nonexistent.sock(DOCKER_HOST)"},
		},
		{
			name:    "duplicates collapse to the first source",
			env:     map[string]string{"DOCKER_HOST": "unix:///var/run/docker.sock"},
			cfgHost: "unix:///var/run/docker.sock",
			exists:  func(p string) bool { return p == "/var/run/docker.sock" },
			want:    []string{"unix:///var/run/docker.sock(DOCKER_HOST)"},
		},
		{
			name:   "only the private engine",
			exists: func(p string) bool { return "unix://"+p == priv },
			want:   []string{priv + "(private)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{StateDir: state}
			cfg.Engine.Host = tt.cfgHost
			e := env{getenv: func(k string) string { return tt.env[k] }, euid: tt.euid, exists: tt.exists}
			var got []string
			for _, c := range candidates(cfg, e) {
				got = append(got, c.host+"("+c.source+")")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("candidates:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPrivatePaths(t *testing.T) {
	short := privatePaths("/var/lib/agentbox")
	if short.Socket != "/var/lib/agentbox/engine/run/docker.sock" {
		t.Errorf("short state dir: socket %s", short.Socket)
	}
	if short.DataRoot != "/var/lib/agentbox/engine/data" || short.ExecRoot != "/var/lib/agentbox/engine/run/exec" {
		t.Errorf("short state dir: %+v", short)
	}
	long := "/" + strings.Repeat("very-long-directory-name/", 4) + "agentbox"
	lp := privatePaths(long)
	if !strings.HasPrefix(lp.DataRoot, long) || !strings.HasPrefix(lp.Log, long) {
		t.Errorf("long state dir: data and log must stay under the state dir: %+v", lp)
	}
	if strings.HasPrefix(lp.Socket, long) {
		t.Errorf("long state dir: socket %s should have moved to a short path", lp.Socket)
	}
	if len(lp.Run)+len(longestRunSuffix) > maxSocketPath {
		t.Errorf("long state dir: run dir %s still too long", lp.Run)
	}
	if again := privatePaths(long); again != lp {
		t.Errorf("paths not deterministic: %+v vs %+v", again, lp)
	}
	if other := privatePaths(long + "2"); other.Run == lp.Run {
		t.Errorf("different state dirs share run dir %s", lp.Run)
	}
	for _, p := range []paths{short, lp} {
		if len(p.Socket) > maxSocketPath {
			t.Errorf("socket path %s longer than %d", p.Socket, maxSocketPath)
		}
	}
}

func TestDockerdArgsStayOffTheNetwork(t *testing.T) {
	args := strings.Join(dockerdArgs(privatePaths("/s")), " ")
	for _, want := range []string{"--bridge=none", "--iptables=false", "--ip-masq=false", "--data-root /s/engine/data", "-H unix:///s/engine/run/docker.sock", "--pidfile /s/engine/run/docker.pid", "--exec-root /s/engine/run/exec"} {
		if !strings.Contains(args, want) {
			t.Errorf("dockerd args %q lack %q", args, want)
		}
	}
}

func TestConnectNoEngine(t *testing.T) {
	cfg := &config.Config{StateDir: t.TempDir()}
	e := env{getenv: func(k string) string {
		if k == "DOCKER_HOST" {
			return "unix://" + cfg.StateDir + "/nothing.sock"
		}
		return ""
	}, exists: func(string) bool { return false }}
	_, _, err := connect(context.Background(), cfg, e)
	if !errors.Is(err, ErrNoEngine) {
		t.Fatalf("err = %v, want ErrNoEngine", err)
	}
	if !strings.Contains(err.Error(), "agentbox engine start") {
		t.Errorf("error does not say what to do: %v", err)
	}
}

func TestStopWithoutEngine(t *testing.T) {
	cfg := &config.Config{StateDir: t.TempDir()}
	if err := Stop(context.Background(), cfg); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Stop = %v, want ErrNotRunning", err)
	}
}

func TestCandidatesDefaultStateDirPrivateEngine(t *testing.T) {
	cfg := &config.Config{StateDir: "/tmp/custom-state"}
	e := env{
		getenv: func(k string) string { return map[string]string{"HOME": "/home/u"}[k] },
		euid:   0,
		exists: func(string) bool { return true },
	}
	var got []string
	for _, c := range candidates(cfg, e) {
		if c.source == SourcePrivate {
			got = append(got, c.host)
		}
	}
	want := []string{"unix:///tmp/custom-state/engine/run/docker.sock", "unix:///home/u/.local/state/agentbox/engine/run/docker.sock"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("private candidates = %v, want %v", got, want)
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
