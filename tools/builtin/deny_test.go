package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/permission"
)

// denyHarness is a workspace with symlinks into denied directories and a
// pipeline in bypass mode whose only limits are the deny rules.
func denyHarness(t *testing.T) (ws string, call func(tool string, input map[string]any) tools.Response) {
	t.Helper()
	env := newEnv(t)
	ws = env.Workspace
	writeFiles(t, ws, map[string]string{
		"src/a.go":              "package src\n",
		"secrets/key":           "TOPSECRET\n",
		"secrets/deep/more.txt": "TOPSECRET again\n",
		".agentbox/config.yaml": "tools: {}\n",
		"docs/readme.md":        "hello\n",
		"nested/keep.txt":       "TOPSECRET is only a word here\n",
	})
	outside := t.TempDir()
	for link, target := range map[string]string{
		"lib": "src", "shh": "secrets", "conf": ".agentbox", "keylink": "secrets/key",
		"nested/deep": "../secrets", "all": ".", "out": outside,
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	rules := func(s ...string) []permission.Rule {
		rs, err := permission.ParseAll(s, "config")
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	reg := tools.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	p := tools.NewPipeline(reg, tools.Options{
		Workspace: ws, Root: env.Root, Home: "/nonexistent-home",
		Mode:     permission.ModeBypass,
		Rules:    permission.Rules{Deny: rules("Read(./secrets/**)", "Edit(./src/**)", "Edit(/.agentbox/**)")},
		Classify: func(ctx context.Context, cmd string) tools.Verdict { return tools.Verdict{Class: tools.ClassDangerous} },
		Sandbox:  env.Sandbox,
	})
	sess := tools.NewSession("s", ws)
	return ws, func(tool string, input map[string]any) tools.Response {
		raw, _ := json.Marshal(input)
		return p.Run(context.Background(), tools.Request{Session: sess, Tool: tool, Input: raw})
	}
}

func TestDenyRulesSeeThroughSymlinks(t *testing.T) {
	ws, call := denyHarness(t)
	tests := []struct {
		name    string
		tool    string
		input   map[string]any
		kind    tools.ErrorKind
		has     []string
		hasNot  []string
		created string // must not exist afterwards
	}{
		{name: "read through an allowed symlink", tool: "Read", input: map[string]any{"file_path": "lib/a.go"}, has: []string{"package src"}},
		{name: "write new file through symlinked dir", tool: "Write", input: map[string]any{"file_path": "lib/new.go", "content": "x"}, kind: tools.ErrPermissionDenied, has: []string{"Edit(./src/**)", "resolves to " + ws + "/src/new.go"}, created: "src/new.go"},
		{name: "edit through symlinked dir", tool: "Edit", input: map[string]any{"file_path": "lib/a.go", "old_string": "src", "new_string": "evil"}, kind: tools.ErrPermissionDenied, has: []string{"Edit(./src/**)"}},
		{name: "rewrite the policy through a symlink", tool: "Write", input: map[string]any{"file_path": "conf/config.yaml", "content": "tools: {mode: bypassPermissions}"}, kind: tools.ErrPermissionDenied, has: []string{"Edit(/.agentbox/**)"}},
		{name: "new policy file through a symlink", tool: "Write", input: map[string]any{"file_path": "conf/local.yaml", "content": "x"}, kind: tools.ErrPermissionDenied, has: []string{"Edit(/.agentbox/**)"}, created: ".agentbox/local.yaml"},
		{name: "read through symlinked dir", tool: "Read", input: map[string]any{"file_path": "shh/key"}, kind: tools.ErrPermissionDenied, has: []string{"Read(./secrets/**)"}, hasNot: []string{"TOPSECRET"}},
		{name: "read a symlink to a denied file", tool: "Read", input: map[string]any{"file_path": "keylink"}, kind: tools.ErrPermissionDenied, has: []string{"Read(./secrets/**)"}, hasNot: []string{"TOPSECRET\n"}},
		{name: "write out of the workspace", tool: "Write", input: map[string]any{"file_path": "out/x", "content": "x"}, kind: tools.ErrPermissionDenied, has: []string{"leads out of the workspace"}},
		{name: "grep a symlinked denied dir", tool: "Grep", input: map[string]any{"pattern": "TOPSECRET", "path": "shh"}, kind: tools.ErrPermissionDenied, has: []string{"Read(./secrets/**)"}},
		{name: "grep the parent", tool: "Grep", input: map[string]any{"pattern": "TOPSECRET", "output_mode": "content"}, has: []string{"nested/keep.txt"}, hasNot: []string{"secrets/", "TOPSECRET\n", "again"}},
		{name: "grep through a symlink to the root", tool: "Grep", input: map[string]any{"pattern": "TOPSECRET", "path": "all", "output_mode": "content"}, has: []string{"keep.txt"}, hasNot: []string{"secrets/", "again"}},
		{name: "grep files mode", tool: "Grep", input: map[string]any{"pattern": "TOPSECRET"}, has: []string{"keep.txt"}, hasNot: []string{"secrets"}},
		{name: "glob everything", tool: "Glob", input: map[string]any{"pattern": "**/*"}, has: []string{"docs/readme.md", "lib"}, hasNot: []string{"secrets", "keylink", "nested/deep", "shh"}},
		{name: "glob into the denied dir", tool: "Glob", input: map[string]any{"pattern": "secrets/**"}, kind: tools.ErrPermissionDenied},
		{name: "glob through a symlink to the root", tool: "Glob", input: map[string]any{"pattern": "**/*", "path": "all"}, has: []string{"docs/readme.md"}, hasNot: []string{"secrets", "keylink"}},
		{name: "ls the parent", tool: "LS", input: map[string]any{"path": ws}, has: []string{"- lib (symlink)", "- docs/"}, hasNot: []string{"secrets", "key", "shh", "- deep"}},
		{name: "ls a symlinked denied dir", tool: "LS", input: map[string]any{"path": ws + "/shh"}, kind: tools.ErrPermissionDenied, has: []string{"Read(./secrets/**)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(tt.tool, tt.input)
			if errKind(r.Result) != tt.kind {
				t.Fatalf("error kind %q, want %q: %s", errKind(r.Result), tt.kind, r.Content)
			}
			for _, s := range tt.has {
				if !strings.Contains(r.Content, s) {
					t.Errorf("result lacks %q:\n%s", s, r.Content)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(r.Content, s) {
					t.Errorf("result shows %q:\n%s", s, r.Content)
				}
			}
			if tt.created != "" {
				if _, err := os.Lstat(filepath.Join(ws, tt.created)); err == nil {
					t.Errorf("%s was created", tt.created)
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".agentbox/config.yaml")); string(b) != "tools: {}\n" {
		t.Errorf("the policy changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src/a.go")); string(b) != "package src\n" {
		t.Errorf("src/a.go changed: %q", b)
	}
}
