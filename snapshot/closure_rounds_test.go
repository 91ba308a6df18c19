package snapshot_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
)

// TestGuardRevertsUntilFixedPoint: each revert can bring back a trigger
// whose own closure the call also changed. Here reverting .git/config
// brings back hooksPath = tools/hooks, reverting that hook brings back
// the line that runs tools/check.sh, and the call's change to that
// script must be reverted too (a third round), or it runs on the host at
// the next commit.
func TestGuardRevertsUntilFixedPoint(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
	write(t, ws, ".git/config", "[core]\n\thooksPath = tools/hooks\n")
	write(t, ws, "tools/hooks/pre-commit", "./tools/check.sh\n")
	write(t, ws, "tools/check.sh", "echo ok\n")
	cfg := config.Default()
	cfg.Workspace = ws
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(snapshot.ProtectConfig(&cfg)),
		snapshot.WithContentProtection(snapshot.ContentConfig(&cfg)))
	must(t, err)
	call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	must(t, err)
	write(t, ws, ".git/config", "[core]\n\thooksPath = other\n")
	write(t, ws, "tools/hooks/pre-commit", "true\n")
	write(t, ws, "tools/check.sh", "touch /tmp/pwned\n")
	e, err := call.Finish(ctx)
	must(t, err)
	if e.RevertError != "" {
		t.Fatalf("revert failed: %s", e.RevertError)
	}
	var rev []string
	for _, r := range e.Reverted {
		rev = append(rev, r.Path)
	}
	if want := []string{".git/config", "tools/check.sh", "tools/hooks/pre-commit"}; !slices.Equal(rev, want) {
		t.Errorf("reverted %v, want %v; journaled %v", rev, want, paths(e.Changes))
	}
	if got := read(ws, "tools/check.sh"); got != "echo ok\n" {
		t.Errorf("tools/check.sh = %q", got)
	}
}
