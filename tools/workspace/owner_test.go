package workspace

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
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
	l := &lazySandbox{cfg: &cfg, log: slog.New(slog.DiscardHandler)}
	_, err := l.Exec(context.Background(), tools.ExecRequest{Command: "true", Dir: "/usr"})
	te := tools.AsToolError(err)
	if te.Kind != tools.ErrPermissionDenied || strings.Contains(te.Message, "engine start") ||
		!strings.Contains(te.Message, "chown -R USER: /usr") || !strings.Contains(te.Message, "sandbox.allow_root_workspace") {
		t.Fatalf("got %v: %s", te.Kind, te.Message)
	}
}
