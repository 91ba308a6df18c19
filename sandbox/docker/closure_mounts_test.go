package docker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClosureMounts: the host-run closure's existing paths are mounted
// read-only at any depth (the hooks directory core.hooksPath names, a
// script a hook names, a file the root .envrc loads), a protected name
// that is a symlink inside the workspace mounts its target instead of
// failing, and package.json (judged by content) is not mounted.
func TestClosureMounts(t *testing.T) {
	ws := t.TempDir()
	r := testRunner(t, ws)
	put := func(rel, data string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(".git/HEAD", "ref: refs/heads/main\n")
	put(".git/config", "[core]\n\thooksPath = tools/hooks\n")
	put("tools/hooks/pre-commit", "sh scripts/check.sh\n")
	put("scripts/check.sh", "exit 0\n")
	put("scripts/other.sh", "exit 0\n")
	put("deep/envrc-real", "source_env_if_exists .envrc.local\ndotenv\n")
	put(".env", "A=1\n")
	put("package.json", `{"scripts":{"test":"true"}}`)
	if err := os.Symlink("deep/envrc-real", filepath.Join(ws, ".envrc")); err != nil {
		t.Fatal(err)
	}
	srcs, err := r.sources(false)
	defer closeSources(srcs)
	if err != nil {
		t.Fatalf("sources: %v", err)
	}
	ro := map[string]bool{}
	for _, s := range srcs {
		ro[s.target] = s.ro
	}
	for _, rel := range []string{"tools/hooks", "scripts/check.sh", "deep/envrc-real", ".env"} {
		if v, ok := ro[filepath.Join(ws, rel)]; !ok || !v {
			t.Errorf("%s is not mounted read-only (mounted %v)", rel, ok)
		}
	}
	for _, rel := range []string{"scripts/other.sh", "package.json", ".envrc"} {
		if _, ok := ro[filepath.Join(ws, rel)]; ok {
			t.Errorf("%s is mounted", rel)
		}
	}
}
