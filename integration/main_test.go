//go:build integration

// Package integration holds end-to-end tests against a real engine. They
// fail, never skip, when no engine answers.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// Shared by every test: the engine client, the agentbox binary mounted as
// init, and the image commands run in.
var (
	cli      *client.Client
	agentbox string
	// backend and runtime every sandbox of the run uses, from
	// AGENTBOX_SANDBOX_BACKEND and AGENTBOX_SANDBOX_RUNTIME (make test runs
	// the sandbox suites once per backend: docker, runsc, podman).
	backend, runtimeName string
	testImage            string
	repoRoot             string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(file))
	tmp, err := os.MkdirTemp("", "agentbox-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// The engine is found the way agentbox finds it (DOCKER_HOST, the
	// default sockets, the private engine under the usual state dir).
	cfg, err := config.Load(config.LoadOptions{Getenv: func(k string) string {
		if k == "AGENTBOX_WORKSPACE" {
			return tmp
		}
		return os.Getenv(k)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: config:", err)
		return 1
	}
	backend, runtimeName = cfg.Sandbox.Backend, cfg.Sandbox.Runtime
	if backend != engine.BackendDocker || runtimeName != "" {
		// Podman's service, or the runtime's registration with the
		// private engine, come from `agentbox engine start`.
		if _, err := engine.Start(ctx, cfg, nil); err != nil {
			fmt.Fprintln(os.Stderr, "integration: FAIL: engine start for backend", backend, "runtime", runtimeName+":", err)
			return 1
		}
	}
	c, info, err := engine.Connect(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: no engine:", err)
		return 1
	}
	cli = c
	defer cli.Close()
	fmt.Fprintf(os.Stderr, "integration: engine %s (%s, %s), sandbox backend %s, runtime %q\n", info.Host, info.Source, info.Version, info.Backend, runtimeName)
	if err := engine.CheckRuntime(ctx, c, runtimeName); err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL:", err)
		return 1
	}
	if agentbox, err = buildAgentbox(ctx, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL:", err)
		return 1
	}
	before, err := imageIDs(ctx, filters.Args{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: listing images:", err)
		return 1
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n := removeTestImages(cctx, before); n > 0 {
			fmt.Fprintf(os.Stderr, "integration: removed %d test image(s)\n", n)
		}
	}()
	if testImage, err = ensureTestImage(ctx, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "integration: FAIL: image:", err)
		return 1
	}
	return m.Run()
}

// buildAgentbox builds the static binary every container mounts as init
// ($AGENTBOX_BIN when set, e.g. by make).
func buildAgentbox(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv("AGENTBOX_BIN"); p != "" {
		return filepath.Abs(p)
	}
	out := filepath.Join(dir, "agentbox")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/agentbox")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building agentbox: %v\n%s", err, b)
	}
	return out, nil
}
