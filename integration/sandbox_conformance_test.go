//go:build integration

package integration

import (
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

func TestSandboxDockerConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (sandbox.Runner, string) {
		return newRunner(t, "", nil)
	})
}
