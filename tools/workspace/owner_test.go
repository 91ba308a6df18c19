package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	_ "github.com/agentbox/agentbox/sandbox/docker" // the backend the default config names
	"github.com/agentbox/agentbox/tools"
)

// TestRootOwnedWorkspaceResult: a command in a root-owned workspace is
// refused with the real reason and both fixes, not as an engine that is
// missing (starting one would change nothing).
func TestRootOwnedWorkspaceResult(t *testing.T) {
	cfg := config.Default()
	cfg.Workspace = "/usr" // owned by root on every Linux
	cfg.StateDir = t.TempDir()
	l := &lazySandbox{cfg: &cfg, log: slog.New(slog.DiscardHandler), net: newNetTracker(nil, nil)}
	_, err := l.Exec(context.Background(), tools.ExecRequest{Command: "true", Dir: "/usr"})
	te := tools.AsToolError(err)
	if te.Kind != tools.ErrPermissionDenied || strings.Contains(te.Message, "engine start") ||
		!strings.Contains(te.Message, "chown -R USER: /usr") || !strings.Contains(te.Message, "sandbox.allow_root_workspace") {
		t.Fatalf("got %v: %s", te.Kind, te.Message)
	}
}

// TestUnavailableSandboxSaysWhy: an unavailable sandbox's result carries
// the reason (here: a missing image), not only "start the engine".
func TestUnavailableSandboxSaysWhy(t *testing.T) {
	err := sandboxError(fmt.Errorf("%w: %w: image agentbox/host is not in the engine's store", sandbox.ErrUnavailable, sandbox.ErrUnavailable))
	te := tools.AsToolError(err)
	if !strings.Contains(te.Message, "nothing was run: image agentbox/host is not in the engine's store") || !strings.Contains(te.Message, "agentbox doctor") {
		t.Fatalf("%s", te.Message)
	}
}
