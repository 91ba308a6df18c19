package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools/permission"
)

func TestProtectStage(t *testing.T) {
	ws := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(t, os.Symlink(".vscode", filepath.Join(ws, "lnk")))
	protected := func(rel string) (string, bool) {
		if rel == ".envrc" || rel == ".vscode" || strings.HasPrefix(rel, ".vscode/") || rel == ".git/config" {
			return rel + " is protected", true
		}
		return "", false
	}
	write := testTools(t)[2]
	bash := testTools(t)[3]
	allowRule := &permission.Rule{Raw: "Write(./.envrc)"}
	tests := []struct {
		name   string
		tool   Tool
		params any
		mode   permission.Mode
		match  permission.Match
		action permission.Action // after the stage
		failed bool
		kept   bool
	}{
		{"plain source file", write, &writeParams{FilePath: filepath.Join(ws, "src/a.go")}, permission.ModeDefault, permission.Match{}, permission.Allow, false, false},
		{".envrc asks", write, &writeParams{FilePath: filepath.Join(ws, ".envrc")}, permission.ModeDefault, permission.Match{}, permission.Ask, false, true},
		{".envrc asks in bypass mode", write, &writeParams{FilePath: filepath.Join(ws, ".envrc")}, permission.ModeBypass, permission.Match{}, permission.Ask, false, true},
		{".envrc refused in dontAsk", write, &writeParams{FilePath: filepath.Join(ws, ".envrc")}, permission.ModeDontAsk, permission.Match{}, permission.Deny, true, true},
		{"explicit allow rule", write, &writeParams{FilePath: filepath.Join(ws, ".envrc")}, permission.ModeDefault, permission.Match{Action: permission.Allow, Rule: allowRule}, permission.Allow, false, true},
		{"through a symlink", write, &writeParams{FilePath: filepath.Join(ws, "lnk/tasks.json")}, permission.ModeDefault, permission.Match{}, permission.Ask, false, true},
		{"a new nested .git", write, &writeParams{FilePath: filepath.Join(ws, "sub/.git/HEAD")}, permission.ModeDefault, permission.Match{}, permission.Ask, false, true},
		{"shell commands pass (changeset check)", bash, &bashParams{Command: "echo > .envrc"}, permission.ModeDefault, permission.Match{}, permission.Allow, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *Call
			root, err := os.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			h := Chain(reached(&got), ProtectStage(func() Protection { return nameOnly(protected) }, ws, root, tt.mode))
			c := decoded(&Call{Tool: tt.tool, Params: tt.params, Decision: Decision{Action: permission.Allow}, Match: tt.match})
			res := h(context.Background(), c)
			if c.Decision.Action != tt.action {
				t.Errorf("action %s, want %s (%s)", c.Decision.Action, tt.action, c.Decision.Reason)
			}
			if (res.Err != nil) != tt.failed {
				t.Errorf("result %+v", res)
			}
			if tt.failed && !strings.Contains(res.Content+res.Err.Message, "Write(") {
				t.Errorf("refusal does not name a rule: %s", res.Err.Message)
			}
			if tt.action == permission.Ask && !strings.Contains(c.Decision.Reason, "protected") && !strings.Contains(c.Decision.Reason, "git metadata") {
				t.Errorf("the question does not say why: %q", c.Decision.Reason)
			}
			if (len(c.ProtectedApproved) > 0) != tt.kept {
				t.Errorf("approved paths %v", c.ProtectedApproved)
			}
			_ = got
		})
	}
}

// nameOnly is a Protection of name rules alone.
type nameOnly func(rel string) (string, bool)

func (n nameOnly) Match(rel string) (string, bool)                 { return n(rel) }
func (nameOnly) Judge(string) func(old, new []byte) (string, bool) { return nil }
func (p *writeParams) NewContent(old []byte) ([]byte, bool)        { return []byte(p.Content), true }

// TestProtectStageClosure: with the configured protection and the
// host-run closure, a Write that changes what a present trigger runs asks
// (package.json's scripts while husky is present, the file .envrc loads,
// the target of a symlinked .claude), while a dependency-only
// package.json change does not.
func TestProtectStageClosure(t *testing.T) {
	ws := t.TempDir()
	put := func(rel, data string) {
		p := filepath.Join(ws, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(".husky/pre-commit", "npm test\n")
	put("package.json", `{"scripts":{"test":"node t.js"},"dependencies":{"a":"1"}}`)
	put(".envrc", "source_env_if_exists .envrc.local\n")
	put("pkg/shared-claude/x", "")
	must(t, os.Symlink("shared-claude", filepath.Join(ws, "pkg/.claude")))
	cfg := config.Default()
	cfg.Workspace = ws
	write := testTools(t)[2]
	tests := []struct {
		name, path, content string
		action              permission.Action
	}{
		{"dependencies only", "package.json", `{"scripts":{"test":"node t.js"},"dependencies":{"a":"2"}}`, permission.Allow},
		{"scripts", "package.json", `{"scripts":{"test":"curl x | sh"},"dependencies":{"a":"1"}}`, permission.Ask},
		{"a nested package.json's lint-staged", "web/package.json", `{"lint-staged":{"*":"sh x"}}`, permission.Ask},
		{"the file .envrc loads", ".envrc.local", "export BASH_ENV=/tmp/x\n", permission.Ask},
		{"a symlinked .claude's target", "pkg/shared-claude/settings.json", "{}", permission.Ask},
		{"an ordinary file", "src/a.js", "x", permission.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := os.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			var got *Call
			h := Chain(reached(&got), ProtectStage(func() Protection { return cfg.Closure(false) }, ws, root, permission.ModeDefault))
			c := decoded(&Call{Tool: write, Params: &writeParams{FilePath: filepath.Join(ws, tt.path), Content: tt.content}, Decision: Decision{Action: permission.Allow}})
			h(context.Background(), c)
			if c.Decision.Action != tt.action {
				t.Errorf("action %s, want %s (%s)", c.Decision.Action, tt.action, c.Decision.Reason)
			}
		})
	}
}

func TestKeepFor(t *testing.T) {
	c := &Call{ID: "c1", Session: NewSession("s", "/ws"), Tool: testTools(t)[3], ProtectedApproved: []string{".envrc"}}
	changes := []ProtectedChange{{Path: ".envrc", Op: "modified", Reason: "r1"}, {Path: ".git/hooks/x", Op: "added", Reason: "r2"}}
	var asked []ApprovalRequest
	allow := ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Approval, error) {
		asked = append(asked, req)
		return Approval{Allow: true, By: "tty"}, nil
	})
	if got := keepFor(c, allow)(context.Background(), changes); len(got) != 2 || len(asked) != 1 || !strings.Contains(asked[0].Summary, ".git/hooks/x") || strings.Contains(asked[0].Summary, ".envrc") {
		t.Fatalf("kept %v, asked %+v", got, asked)
	}
	if got := keepFor(c, DenyApprover{})(context.Background(), changes); len(got) != 1 || got[0] != ".envrc" {
		t.Fatalf("with nobody to ask kept %v", got)
	}
}

// An approval covers what the call's tool wrote: a change to the approved
// path with other content, or one the tool never wrote (a running
// command's), is asked about like any other.
func TestKeepForChecksWrittenContent(t *testing.T) {
	c := &Call{ID: "c1", Session: NewSession("s", "/ws"), Tool: testTools(t)[3], ProtectedApproved: []string{".envrc", ".npmrc"}}
	// As the pipeline's Env of an approved call does (newEnv, WriteFile).
	c.protectedWrites = &writtenSet{}
	c.protectedWrites.set(".envrc", []byte("approved\n"))
	sum := sha256.Sum256([]byte("approved\n"))
	good := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name string
		ch   ProtectedChange
		kept bool
	}{
		{"what the tool wrote", ProtectedChange{Path: ".envrc", Op: "modified", Hash: good}, true},
		{"overwritten since", ProtectedChange{Path: ".envrc", Op: "modified", Hash: strings.Repeat("0", 64)}, false},
		{"deleted since", ProtectedChange{Path: ".envrc", Op: "deleted"}, false},
		{"approved but never written", ProtectedChange{Path: ".npmrc", Op: "added", Hash: good}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keepFor(c, DenyApprover{})(context.Background(), []ProtectedChange{tc.ch})
			if kept := len(got) == 1; kept != tc.kept {
				t.Fatalf("kept %v, want kept %v", got, tc.kept)
			}
		})
	}
}
