// Package engine finds, connects to and, when none answers, starts a Docker
// Engine API endpoint for agentbox's sandbox.
//
// Connect tries, in order: $DOCKER_HOST, the engine.host config key, the
// default Docker socket, Podman's rootful and rootless sockets, and finally
// the private engine agentbox itself runs under the state directory. The
// first endpoint that answers a real (version-negotiating) request wins; the
// returned client speaks the daemon's API version, so a Docker 20.10 daemon
// (API 1.41) and Podman's Docker API both work.
//
// Start runs that private engine: Debian's dockerd with its own data root,
// exec root, socket and pid file under the state directory, no bridge and no
// iptables or masquerading changes, its log kept in a file. Stop stops only
// that private engine, never one agentbox did not start.
//
// The package logs nothing unless handed a logger. All functions are safe
// for concurrent use; Start and Stop of the same state directory should not
// race each other.
package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
)

// Sources say how an engine was found.
const (
	SourceEnv     = "DOCKER_HOST"    // the DOCKER_HOST environment variable
	SourceConfig  = "config"         // the engine.host configuration key
	SourceDefault = "default-socket" // the default Docker socket (or rootless Docker's)
	SourcePodman  = "podman"         // Podman's Docker-compatible socket
	SourcePrivate = "private"        // the private dockerd started by Start
)

// ErrNoEngine is wrapped by Connect's error when no endpoint answers.
var ErrNoEngine = errors.New("no Docker engine answers")

// ErrNotRunning is wrapped by Stop's error when the private engine is not
// running.
var ErrNotRunning = errors.New("the private engine is not running")

// Info describes the engine in use.
type Info struct {
	// Host is the engine's address, usable as DOCKER_HOST.
	Host string `json:"host"`
	// Source says how it was found: one of the Source constants.
	Source string `json:"source"`
	// Version is the engine's version as it reports it (e.g. 20.10.24).
	Version string `json:"version"`
	// Backend is the sandbox backend this engine serves (sandbox.backend:
	// "docker" or "podman").
	Backend string `json:"backend"`
	// Runtime is the OCI runtime containers run under (sandbox.runtime;
	// "" is the engine's default).
	Runtime string `json:"runtime,omitempty"`

	podman bool // the endpoint says it is Podman
	// Remote: the engine is reached over the network (tcp://, ssh://, …),
	// so it cannot see this host's workspace; the sandbox refuses it.
	Remote bool `json:"remote,omitempty"`
}

// Backend names that change how the engine is found.
const (
	BackendDocker = "docker"
	BackendPodman = "podman"
)

// probeTimeout bounds each candidate's first request.
const probeTimeout = 3 * time.Second

// candidate is one address to try.
type candidate struct {
	host   string
	source string
	// fromEnv builds the client from the whole Docker environment
	// (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
	fromEnv bool
}

// env is the subset of the process environment discovery reads.
type env struct {
	getenv func(string) string
	euid   int
	// exists reports whether a unix socket path is present; tests fake it.
	exists func(string) bool
}

func osEnv() env {
	return env{getenv: os.Getenv, euid: os.Geteuid(), exists: func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode()&os.ModeSocket != 0
	}}
}

// candidates lists, in discovery order, the addresses worth trying. Unix
// sockets that do not exist are left out, duplicates too. With the podman
// backend only Podman endpoints count (and agentbox's own Podman service
// instead of its private dockerd).
func candidates(cfg *config.Config, e env) []candidate {
	podman := cfg.Sandbox.Backend == BackendPodman
	var out []candidate
	seen := map[string]bool{}
	add := func(c candidate) {
		if seen[c.host] {
			return
		}
		if p, ok := strings.CutPrefix(c.host, "unix://"); ok && !c.fromEnv && !e.exists(p) {
			return
		}
		seen[c.host] = true
		out = append(out, c)
	}
	if h := e.getenv("DOCKER_HOST"); h != "" {
		add(candidate{host: h, source: SourceEnv, fromEnv: true})
	}
	if cfg.Engine.Host != "" {
		add(candidate{host: cfg.Engine.Host, source: SourceConfig})
	}
	if !podman {
		add(candidate{host: "unix:///var/run/docker.sock", source: SourceDefault})
	}
	add(candidate{host: "unix:///run/podman/podman.sock", source: SourcePodman})
	runtimeDir := e.getenv("XDG_RUNTIME_DIR")
	if runtimeDir == "" && e.euid > 0 {
		runtimeDir = fmt.Sprintf("/run/user/%d", e.euid)
	}
	if runtimeDir != "" {
		if !podman {
			add(candidate{host: "unix://" + filepath.Join(runtimeDir, "docker.sock"), source: SourceDefault})
		}
		add(candidate{host: "unix://" + filepath.Join(runtimeDir, "podman", "podman.sock"), source: SourcePodman})
	}
	ownSocket := func(stateDir string) string { return privatePaths(stateDir).Socket }
	if podman {
		ownSocket = func(stateDir string) string { return podmanPaths(stateDir).Socket }
	}
	add(candidate{host: "unix://" + ownSocket(cfg.StateDir), source: SourcePrivate})
	// The engine `agentbox engine start` runs with the default state dir
	// serves every state dir (tests and tools often use their own).
	if def := defaultStateDir(e.getenv); def != "" {
		add(candidate{host: "unix://" + ownSocket(def), source: SourcePrivate})
	}
	return out
}

// defaultStateDir is the state dir config.Load picks when none is given.
func defaultStateDir(getenv func(string) string) string {
	if sd := getenv("AGENTBOX_STATE_DIR"); sd != "" && filepath.IsAbs(sd) {
		return sd
	}
	base := getenv("XDG_STATE_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "agentbox")
}

// Connect returns a client for the first engine that answers, with its API
// version negotiated, and says which engine that is. The caller closes the
// client. When nothing answers the error wraps ErrNoEngine and tells the
// user to run `agentbox engine start`.
func Connect(ctx context.Context, cfg *config.Config) (*client.Client, Info, error) {
	return connect(ctx, cfg, osEnv())
}

func connect(ctx context.Context, cfg *config.Config, e env) (*client.Client, Info, error) {
	var tried []string
	for _, c := range candidates(cfg, e) {
		cli, info, err := probe(ctx, c)
		if err == nil && cfg.Sandbox.Backend == BackendPodman && !info.podman {
			cli.Close()
			err = errors.New("answers but is not Podman (sandbox.backend is podman)")
		}
		if err == nil {
			info.Backend = cfg.Sandbox.Backend
			if info.Backend == "" {
				info.Backend = BackendDocker
			}
			info.Runtime = cfg.Sandbox.Runtime
			info.Remote = IsRemote(cli.DaemonHost())
			return cli, info, nil
		}
		if ctx.Err() != nil {
			return nil, Info{}, fmt.Errorf("connecting to the engine: %w", context.Cause(ctx))
		}
		tried = append(tried, fmt.Sprintf("%s (%s): %v", c.host, c.source, shortErr(err)))
	}
	msg := "no DOCKER_HOST, no engine.host, and no Docker, Podman or private engine socket"
	if len(tried) > 0 {
		msg = "tried " + strings.Join(tried, "; ")
	}
	return nil, Info{}, fmt.Errorf("%w (%s); run `agentbox engine start` (as root it starts a private engine), or point DOCKER_HOST at a running Docker or Podman engine", ErrNoEngine, msg)
}

// probe makes a client for c and sends it a real request, which also
// negotiates the API version (Ping alone does not).
func probe(ctx context.Context, c candidate) (*client.Client, Info, error) {
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	if c.fromEnv {
		opts = append([]client.Opt{client.FromEnv}, opts...)
	} else {
		opts = append([]client.Opt{client.WithHost(c.host)}, opts...)
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, Info{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	v, err := cli.ServerVersion(pctx)
	if err != nil {
		cli.Close()
		return nil, Info{}, err
	}
	info := Info{Host: c.host, Source: c.source, Version: v.Version}
	for _, comp := range v.Components {
		if strings.Contains(comp.Name, "Podman") {
			info.podman = true
		}
	}
	return cli, info, nil
}

// IsRemote reports whether a Docker host address reaches the engine over
// the network (tcp://, ssh://, http(s)://, fd://) rather than through a
// local unix socket. A remote engine resolves bind sources on its own
// machine: it cannot see this host's workspace, nor agentbox's pins.
func IsRemote(host string) bool {
	return !strings.HasPrefix(host, "unix://") && !strings.HasPrefix(host, "/")
}

// shortErr keeps an error's text to one reasonably short line.
func shortErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
