package sandbox_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

func TestRegistry(t *testing.T) {
	opened := map[sandbox.Runner]string{} // runner -> the workspace it was opened for
	sandbox.Register("test-a", func(_ context.Context, cfg *config.Config, _ *slog.Logger, _ sandbox.Network) (sandbox.Runner, error) {
		r := sandboxtest.NewFake(cfg.Workspace)
		opened[r] = "a:" + cfg.Workspace
		return r, nil
	})
	sandbox.Register("test-fails", func(context.Context, *config.Config, *slog.Logger, sandbox.Network) (sandbox.Runner, error) {
		return nil, sandbox.ErrUnavailable
	})
	if got := sandbox.Backends(); !slices.Contains(got, "test-a") || !slices.IsSorted(got) {
		t.Errorf("Backends() = %v", got)
	}
	tests := []struct {
		backend string
		want    string
		err     error
	}{
		{"test-a", "a:/ws", nil},
		{"test-fails", "", sandbox.ErrUnavailable},
		{"no-such", "", sandbox.ErrUnknownBackend},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			cfg := config.Default()
			cfg.Workspace = "/ws"
			cfg.Sandbox.Backend = tt.backend
			r, err := sandbox.Open(context.Background(), &cfg, nil)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.err == nil && opened[r] != tt.want {
				t.Errorf("opened %v, want %s", r, tt.want)
			}
			if errors.Is(err, sandbox.ErrUnknownBackend) && (!errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "test-a")) {
				t.Errorf("unknown backend error does not list the registered ones: %v", err)
			}
		})
	}
	t.Run("empty means docker", func(t *testing.T) {
		cfg := config.Default()
		cfg.Sandbox.Backend = ""
		if sandbox.BackendName(&cfg) != sandbox.DefaultBackend {
			t.Error("empty backend is not the default")
		}
	})
	t.Run("duplicate panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("registering a name twice did not panic")
			}
		}()
		sandbox.Register("test-a", func(context.Context, *config.Config, *slog.Logger, sandbox.Network) (sandbox.Runner, error) {
			return nil, nil
		})
	})
}
