//go:build integration

package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

// TestSandboxConfiguredTimeouts: the docker runner gives a command that
// sets no timeout sandbox.default_timeout and caps a longer one at
// sandbox.max_timeout (sandbox.Normalize with the backend's limits). A
// runner that fell back to the built-in 2 and 10 minutes would let these
// sleeps run to their end.
func TestSandboxConfiguredTimeouts(t *testing.T) {
	r, _ := newRunner(t, "", func(c *config.Config) {
		c.Sandbox.DefaultTimeout = time.Second
		c.Sandbox.MaxTimeout = 2 * time.Second
	})
	for _, tt := range []struct {
		name    string
		timeout time.Duration
	}{
		{"default applies", 0},
		{"cap applies", time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, err := runIn(t, r, sandbox.Spec{Shell: "sleep 60", Timeout: tt.timeout})
			if took := time.Since(start); !errors.Is(err, sandbox.ErrTimeout) || !res.TimedOut || took > 30*time.Second {
				t.Fatalf("sleep 60 with timeout %v: %v (timed out %v) after %v; want ErrTimeout within seconds", tt.timeout, err, res.TimedOut, took)
			}
		})
	}
}
