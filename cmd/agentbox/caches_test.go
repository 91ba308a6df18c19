package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/docker"
)

func TestCachesListAndClear(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg := config.Config{Workspace: ws, StateDir: state}
	dir := filepath.Join(cfg.WorkspaceStateDir(), docker.BuildCacheSubdir)
	must(t, os.MkdirAll(filepath.Join(dir, "go-build", "ab"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "go-build", "ab", "x-d"), make([]byte, 3000), 0o600))
	outside := filepath.Join(t.TempDir(), "keep")
	must(t, os.WriteFile(outside, []byte("keep"), 0o600))
	must(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "escape")))

	out, _, err := runCLI(t, "--workspace", ws, "--state-dir", state, "caches", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep cachesReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.BuildCache == nil || rep.BuildCache.Dir != dir || rep.BuildCache.Bytes < 3000 || rep.BuildCache.Mount != "/.agentbox/cache" {
		t.Fatalf("build cache %+v", rep.BuildCache)
	}
	out, _, err = runCLI(t, "--workspace", ws, "--state-dir", state, "caches", "clear")
	if err != nil || !strings.Contains(out, "cleared") {
		t.Fatalf("clear: %v %s", err, out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Fatal("clear followed a symlink out of the cache")
	}
}
