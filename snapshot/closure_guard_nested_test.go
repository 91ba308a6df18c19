package snapshot_test

import (
	"context"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
)

// TestClosureGuardNestedRepo: the workspace holds a repository below its
// root (app/.git, whose pre-commit hook runs npm test). A shell call that
// changes app/package.json's scripts is reverted: the content judge sees
// the hook runner the tree walk finds, not only the root's.
func TestClosureGuardNestedRepo(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, "app/.git/HEAD", "ref: refs/heads/main\n")
	write(t, ws, "app/.git/hooks/pre-commit", "#!/bin/sh\nnpm test\n")
	pkg := `{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"1"}}`
	write(t, ws, "app/package.json", pkg)
	cfg := config.Default()
	cfg.Workspace = ws
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(snapshot.ProtectConfig(&cfg)),
		snapshot.WithContentProtection(snapshot.ContentConfig(&cfg)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		content  string
		reverted bool
	}{
		{`{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"2"}}`, false},
		{`{"name":"x","scripts":{"test":"touch /tmp/pwned"},"dependencies":{"a":"2"}}`, true},
	} {
		call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
		if err != nil {
			t.Fatal(err)
		}
		write(t, ws, "app/package.json", tt.content)
		e, err := call.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(e.Reverted) > 0; got != tt.reverted {
			t.Errorf("%s: reverted %v, want %v", tt.content, e.Reverted, tt.reverted)
		}
	}
	if got := read(ws, "app/package.json"); got != `{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"2"}}` {
		t.Errorf("app/package.json = %q", got)
	}
}
