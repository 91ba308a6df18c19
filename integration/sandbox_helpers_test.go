//go:build integration

package integration

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// Workspace owner in the tests: an unprivileged uid, as in real use.
const wsUID, wsGID = 4242, 4242

// newWorkspace makes an empty workspace owned by the test uid.
func newWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(ws, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, wsUID, wsGID); err != nil {
		t.Fatal(err)
	}
	return ws
}

// testConfig is the configuration the tests run the sandbox with.
func testConfig(t *testing.T, ws string) *config.Config {
	cfg := config.Default()
	cfg.Workspace = ws
	cfg.StateDir = t.TempDir()
	cfg.Sandbox.Image = testImage
	cfg.Sandbox.InitBinary = agentbox
	cfg.Sandbox.PoolSize = 1
	cfg.Sandbox.Backend, cfg.Sandbox.Runtime = backend, runtimeName
	return &cfg
}

// newRunner starts a docker Runner over ws (a fresh workspace when "").
func newRunner(t *testing.T, ws string, mutate func(*config.Config)) (*docker.Runner, string) {
	t.Helper()
	if ws == "" {
		ws = newWorkspace(t)
	}
	cfg := testConfig(t, ws)
	if mutate != nil {
		mutate(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var log *slog.Logger
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	r, err := docker.New(ctx, cli, cfg, log, docker.WithHostMounts(nil))
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r, ws
}

// newRunnerFromConfig opens a Runner with the image defaults (host
// mounts for the host image).
func newRunnerFromConfig(ctx context.Context, cfg *config.Config) (*docker.Runner, error) {
	return docker.New(ctx, cli, cfg, nil)
}

func runIn(t *testing.T, r sandbox.Runner, spec sandbox.Spec) (sandbox.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return r.Run(ctx, spec)
}
