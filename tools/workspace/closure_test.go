package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClosureFollowsEntryFeed: the workspace's closure is reused while
// nothing it depends on changes, and a symlink with a protected name made
// deep in the tree — which only the whole-tree walk finds — is protected
// at the next call, through the store's real watcher feed.
func TestClosureFollowsEntryFeed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the change capture's watcher needs root (CAP_SYS_ADMIN)")
	}
	cfg := testConfig(t)
	cfg.Snapshot.ChangeCapture = "auto"
	ws := cfg.Workspace
	for p, v := range map[string]string{"shared/settings.json": "{}", "src/a/b/main.go": "package b\n"} {
		full := filepath.Join(ws, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // past the racy window of the files just made
	l := NewSnapshots(cfg, nil)
	defer l.Close()
	if _, err := l.get(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Closure() // subscribes: computed
	l.Closure() // vouched for by the feed: reused
	if l.closure.Reuses() != 1 {
		t.Fatalf("an unchanged workspace was computed again: reuses %d", l.closure.Reuses())
	}
	if err := os.WriteFile(filepath.Join(ws, "src/a/b/other.go"), []byte("package b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Closure().Match("shared/settings.json"); ok || l.closure.Reuses() != 2 {
		t.Fatalf("an unrelated new file changed the closure (reuses %d)", l.closure.Reuses())
	}
	if err := os.Symlink("../../../shared", filepath.Join(ws, "src/a/b/.claude")); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Closure().Match("shared/settings.json"); !ok {
		t.Fatal("the target of a new symlinked .claude is not protected at the next call")
	}
}
