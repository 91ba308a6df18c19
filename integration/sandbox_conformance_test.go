//go:build integration

package integration

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// TestSandboxConformance runs the shared suite against the backend of
// this run (docker by default; AGENTBOX_SANDBOX_RUNTIME=runsc or
// AGENTBOX_SANDBOX_BACKEND=podman for the others), opened the way
// agentbox opens it: through the registry.
func TestSandboxConformance(t *testing.T) {
	t.Logf("backend %s, runtime %q", backend, runtimeName)
	sandboxtest.Run(t, func(t *testing.T) (sandbox.Runner, string) {
		ws := newWorkspace(t)
		cfg := testConfig(t, ws)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := sandbox.Open(ctx, cfg, nil)
		if err != nil {
			t.Fatalf("sandbox.Open(%s, runtime %q): %v", backend, runtimeName, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := r.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		if runtimeName == "runsc" {
			// Proof that the suite runs under gVisor: its Sentry reports a
			// kernel of its own, not the host's.
			host, _ := os.ReadFile("/proc/version")
			res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"cat", "/proc/version"}})
			if err != nil || len(res.Stdout) == 0 || string(res.Stdout) == string(host) {
				t.Fatalf("runtime runsc, but the container reports the host kernel %q (%v): not gVisor", res.Stdout, err)
			}
		}
		return r, ws
	})
}

// TestSandboxRemoteEngineRefused puts the engine behind a TCP address, as
// DOCKER_HOST=tcp://… would: it answers, but it could not see this
// machine's workspace, and the runner refuses it before creating anything.
func TestSandboxRemoteEngineRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	sock := strings.TrimPrefix(cli.DaemonHost(), "unix://")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	remote, err := client.NewClientWithOpts(client.WithHost("tcp://"+ln.Addr().String()), client.WithAPIVersionNegotiation())
	must(t, err)
	defer remote.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := remote.ServerVersion(ctx); err != nil {
		t.Fatalf("the TCP endpoint does not answer, the test proves nothing: %v", err)
	}
	cfg := testConfig(t, newWorkspace(t))
	r, err := docker.New(ctx, remote, cfg, nil)
	if err == nil {
		r.Close(ctx)
		t.Fatal("a runner opened on a remote engine")
	}
	if !errors.Is(err, docker.ErrRemoteEngine) || !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "cannot see this machine's workspace") {
		t.Errorf("err = %v, want ErrRemoteEngine with a clear message", err)
	}
}
