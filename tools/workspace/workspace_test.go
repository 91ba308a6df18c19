package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

func testConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	cfg.Workspace = ws
	cfg.StateDir = t.TempDir()
	return &cfg
}

func TestOpenRunsWriteAndUndo(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools.AutoAllowSandboxed = false // every dangerous command asks
	ctx := context.Background()
	hr := sandboxtest.NewFake(cfg.Workspace)
	sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: hr})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := sys.Sessions.Load("t")
	run := func(tool, in string) tools.Response {
		return sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: json.RawMessage(in)})
	}
	w := run("Write", `{"file_path":"a.txt","content":"one\n"}`)
	if w.Err != nil || w.Meta["journal_id"] == nil || hr.Calls() != 1 {
		t.Fatalf("write: %+v (runner calls %d)", w, hr.Calls())
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.Workspace, "a.txt")); string(b) != "one\n" {
		t.Fatalf("content %q", b)
	}
	if r := run("Bash", `{"command":"rm a.txt"}`); r.Err == nil || r.Err.Kind != tools.ErrNeedsApproval {
		t.Fatalf("dangerous command ran without approval: %+v", r)
	}
	if r := run("Write", `{"file_path":".agentbox/config.yaml","content":"tools: {}"}`); r.Err == nil || r.Err.Kind != tools.ErrPermissionDenied {
		t.Fatalf("agent rewrote the project config: %+v", r)
	}
	if err := sys.Sessions.Save(sess); err != nil {
		t.Fatal(err)
	}
	sys.Close(ctx)

	st, err := snapshot.Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Undo(ctx, w.Meta["journal_id"].(string), false, snapshot.CallInfo{Session: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Workspace, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("undo did not remove the written file")
	}
	n, err := sys.Audit.Verify()
	if err != nil || n != 3 {
		t.Fatalf("audit: %d %v", n, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mut    func(c *config.Config)
		errHas string
	}{
		{"bad rule", func(c *config.Config) { c.Tools.Deny = []string{"Bash("} }, "parenthesis"},
		{"read-only dir holds state", func(c *config.Config) { c.Tools.ReadOnlyDirs = []string{filepath.Dir(c.StateDir)} }, "state dir"},
		{"missing read-only dir", func(c *config.Config) { c.Tools.ReadOnlyDirs = []string{"/nonexistent-dir"} }, "nonexistent"},
		{"bad mode", func(c *config.Config) { c.Tools.Mode = "yolo" }, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.mut(cfg)
			if _, err := Open(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Open = %v, want error containing %q", err, tt.errHas)
			}
		})
	}
}

func TestVisible(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools.Mode = "plan"
	cfg.Tools.Deny = []string{"Grep"}
	sys, err := Open(context.Background(), cfg, Options{Register: builtin.Register})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	var names []string
	for _, x := range sys.Visible() {
		names = append(names, x.Name())
	}
	got := strings.Join(names, ",")
	for _, absent := range []string{"Grep", "Write", "Edit", "MultiEdit"} {
		if strings.Contains(","+got+",", ","+absent+",") {
			t.Errorf("%s offered in plan mode with deny Grep: %s", absent, got)
		}
	}
	for _, present := range []string{"Read", "Bash", "Glob"} {
		if !strings.Contains(got, present) {
			t.Errorf("%s missing: %s", present, got)
		}
	}
}

func TestDiscoveryRegisters(t *testing.T) {
	cfg := testConfig(t)
	script := filepath.Join(cfg.Workspace, "decl.sh")
	must(t, os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = run ]; then cat; exit 0; fi
echo '[{"name":"lint","description":"Lints","input_schema":{"type":"object","properties":{"fix":{"type":"boolean"}}}}]'
`), 0o755))
	cfg.Tools.Discovery = []string{script}
	cfg.Tools.Allow = []string{"lint"}
	sys, err := Open(context.Background(), cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(cfg.Workspace)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	list := sys.Registry.List()
	if last := list[len(list)-1]; last.Name() != "lint" {
		t.Fatalf("discovered tool not last: %s", last.Name())
	}
	r := sys.Pipeline.Run(context.Background(), tools.Request{Tool: "lint", Input: json.RawMessage(`{"fix":"true"}`)})
	if r.Err != nil || strings.TrimSpace(r.Content) != `{"fix":true}` {
		t.Fatalf("lint: %+v", r)
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
