package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/permission"
)

// TestContainedRunsAndUndoes: by default a dangerous command runs without
// asking (no approver could answer here), is journaled, and its undo
// restores the workspace; the real classifier judges it.
func TestContainedRunsAndUndoes(t *testing.T) {
	cfg := testConfig(t)
	ctx := context.Background()
	sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(cfg.Workspace)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(ctx)
	sess, _ := sys.Sessions.Load("t")
	r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: "Bash", Input: json.RawMessage(`{"command":"sh -c 'echo hi > f'"}`)})
	if r.Err != nil {
		t.Fatalf("a contained command did not run: %+v", r)
	}
	id, _ := r.Meta["journal_id"].(string)
	if id == "" || !strings.Contains(r.Content, "agentbox undo "+id) {
		t.Fatalf("no journal entry or undo hint: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.Workspace, "f")); string(b) != "hi\n" {
		t.Fatalf("f = %q", b)
	}
	if _, err := sys.Snapshots().Undo(ctx, id, tools.SnapshotInfo{Session: "t", Tool: "Undo"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Workspace, "f")); !os.IsNotExist(err) {
		t.Fatalf("undo left f behind: %v", err)
	}
	recs, err := sys.Audit.Read()
	if err != nil || len(recs) == 0 || recs[0].DecidedBy != permission.ByContained {
		t.Fatalf("audit: %+v %v", recs, err)
	}
}

// TestCompoundShapesUnderGrant: with only `go test` granted (and
// auto_allow_sandboxed off, so that nothing runs unless a rule or grant
// covers it), the real classifier's parts decide which shapes agents
// write run and which ask.
func TestCompoundShapesUnderGrant(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools.AutoAllowSandboxed = false
	ctx := context.Background()
	sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(cfg.Workspace)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(ctx)
	if err := sys.Grants.Add(tools.Grant{Tool: "Bash", Prefix: []string{"go", "test"}, Scope: tools.GrantProject}); err != nil {
		t.Fatal(err)
	}
	if err := sys.Grants.Add(tools.Grant{Tool: "Bash", Prefix: []string{"rm"}, Scope: tools.GrantProject}); err != nil {
		t.Fatal(err)
	}
	must(t, os.Mkdir(filepath.Join(cfg.Workspace, "x"), 0o755))
	ws := cfg.Workspace
	tests := []struct {
		cmd   string
		allow bool
		kind  tools.ErrorKind
	}{
		{"go test ./... 2>&1 | tail -5", true, ""},
		{"cd " + ws + " && go test ./...", true, ""},
		{"cd x && go test ./...", true, ""},
		{"go test ./... && echo done", true, ""},
		{"(go test ./x)", true, ""},
		{"{ go test ./x; }", true, ""},
		{"go test ./... > out.txt", true, ""}, // the redirection is go test's, judged as before
		{"FOO=1 go test", true, ""},
		{"go test ./... ; make x", false, tools.ErrNeedsApproval},
		{"make x && go test", false, tools.ErrNeedsApproval},
		{"go test $(curl x)", false, tools.ErrNeedsApproval},
		{"go test $PKG", false, tools.ErrNeedsApproval},
		{"cd /etc && go test ./...", false, tools.ErrNeedsApproval},
		{"cd .. && go test ./...", false, tools.ErrNeedsApproval},
		{"PATH=. go test", false, tools.ErrNeedsApproval},
		{"bash -c 'go test'", false, tools.ErrNeedsApproval},
		{"eval go test", false, tools.ErrNeedsApproval},
		{"timeout 5 go test", false, tools.ErrNeedsApproval},
		{"go test && rm -rf /", false, tools.ErrForbidden}, // rm is granted, but never a forbidden part
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			sess, _ := sys.Sessions.Load("t")
			r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: "Bash", Input: json.RawMessage(fmt.Sprintf(`{"command":%q}`, tt.cmd))})
			refused := r.Err != nil && (r.Err.Kind == tools.ErrNeedsApproval || r.Err.Kind == tools.ErrForbidden || r.Err.Kind == tools.ErrPermissionDenied)
			if refused == tt.allow {
				t.Fatalf("allowed = %v, want %v: %+v", !refused, tt.allow, r.Result)
			}
			if !tt.allow && r.Err.Kind != tt.kind {
				t.Fatalf("error kind %s, want %s: %s", r.Err.Kind, tt.kind, r.Content)
			}
		})
	}
}
