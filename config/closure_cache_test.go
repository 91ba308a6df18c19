package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// scriptedFeed stands for the store's entry-change feed: the test tells
// it which entries it changed, as the watcher would report them.
type scriptedFeed struct {
	paths map[string]bool
	lost  bool
}

func (f *scriptedFeed) take() (map[string]bool, bool) {
	p, ok := f.paths, !f.lost
	f.paths, f.lost = map[string]bool{}, false
	return p, ok
}

func (f *scriptedFeed) changed(p ...string) {
	for _, x := range p {
		f.paths[x] = false
	}
}

func newTestCache(t testing.TB, files map[string]string) (string, *ClosureCache, *scriptedFeed) {
	ws, root := plant(t, files)
	prot := defaultProtection()
	feed := &scriptedFeed{paths: map[string]bool{}}
	k := &ClosureCache{ws: ws, feed: feed.take, build: func() *Closure {
		return prot.Closure(root, ClosureOptions{Workspace: ws, IsGitDir: GitDirTest(ws)})
	}}
	// Older than racyWindow: a build may vouch for what it read.
	time.Sleep(racyWindow + 50*time.Millisecond)
	return ws, k, feed
}

func write(t testing.TB, ws, rel, content string) {
	t.Helper()
	full := filepath.Join(ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClosureCacheInvalidation(t *testing.T) {
	base := map[string]string{
		".git/config":       "[core]\n\thooksPath = .husky\n",
		".husky/pre-commit": "sh scripts/a.sh\n",
		"scripts/a.sh":      "",
		"scripts/b.sh":      "",
		"shared/settings":   "{}",
		"src/main.go":       "package main\n",
		"pkg/x/readme":      "",
		"deps/.bin/eslint":  "",
	}
	tests := []struct {
		name string
		// change changes the workspace and tells the feed.
		change func(t *testing.T, ws string, f *scriptedFeed)
		reuse  bool
		// protected and free are checked on the closure after the change.
		protected, free []string
	}{
		{name: "unrelated file changed", reuse: true, change: func(t *testing.T, ws string, f *scriptedFeed) {
			write(t, ws, "src/main.go", "package main // edited\n")
			write(t, ws, "src/new.go", "package main\n")
			f.changed("src/new.go")
		}, protected: []string{"scripts/a.sh"}, free: []string{"src/new.go", "scripts/b.sh"}},
		{name: "unrelated directory moved in", reuse: true, change: func(t *testing.T, ws string, f *scriptedFeed) {
			write(t, ws, "lib/deep/x.go", "package x\n")
			f.changed("lib")
		}, protected: []string{"scripts/a.sh"}, free: []string{"lib/deep/x.go"}},
		{name: "trigger edited", change: func(t *testing.T, ws string, f *scriptedFeed) {
			write(t, ws, ".husky/pre-commit", "sh scripts/b.sh\n") // same size: only the times tell
		}, protected: []string{"scripts/b.sh"}},
		{name: "git config edited", change: func(t *testing.T, ws string, f *scriptedFeed) {
			write(t, ws, ".git/config", "[core]\n\thooksPath = hk\n")
			write(t, ws, "hk/pre-push", "sh scripts/b.sh\n")
		}, protected: []string{"hk/pre-push", "scripts/b.sh"}},
		{name: "new symlinked protected name", change: func(t *testing.T, ws string, f *scriptedFeed) {
			if err := os.Symlink("../../shared", filepath.Join(ws, "pkg/x/.claude")); err != nil {
				t.Fatal(err)
			}
			f.changed("pkg/x/.claude")
		}, protected: []string{"shared/settings"}},
		{name: "directory with an .envrc moved in", change: func(t *testing.T, ws string, f *scriptedFeed) {
			write(t, ws, "sub/dir/.envrc", "source_env ../../scripts/b.sh\n")
			f.changed("sub")
		}, protected: []string{"scripts/b.sh", "sub/dir/.envrc"}},
		{name: "new symlinked node_modules (a PATH directory of dependencies)", change: func(t *testing.T, ws string, f *scriptedFeed) {
			if err := os.Symlink("deps", filepath.Join(ws, "pkg/node_modules")); err != nil {
				t.Fatal(err)
			}
			write(t, ws, "pkg/deps/.bin/git", "")
			f.changed("pkg/node_modules")
			f.changed("pkg/deps")
		}, protected: []string{"pkg/deps/.bin/git"}, free: []string{"deps/.bin/eslint"}},
		{name: "feed lost", change: func(t *testing.T, ws string, f *scriptedFeed) {
			if err := os.Symlink("../../shared", filepath.Join(ws, "pkg/x/.claude")); err != nil {
				t.Fatal(err)
			}
			f.lost = true
		}, protected: []string{"shared/settings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, k, feed := newTestCache(t, base)
			first := k.Get()
			if !first.reusable() {
				t.Fatalf("the first build cannot vouch for itself: racy=%v blind=%v walk=%+v", first.racy, first.blind, first.walk)
			}
			if again := k.Get(); k.reuses != 1 || again == nil {
				t.Fatalf("an unchanged workspace was computed again (builds %d)", k.builds)
			}
			tt.change(t, ws, feed)
			c := k.Get()
			if got := k.reuses == 2; got != tt.reuse {
				t.Fatalf("reused = %v, want %v (builds %d)", got, tt.reuse, k.builds)
			}
			for _, p := range tt.protected {
				if _, ok := c.Match(p); !ok {
					t.Errorf("%s is not protected after the change", p)
				}
			}
			for _, p := range tt.free {
				if why, ok := c.Match(p); ok {
					t.Errorf("%s is protected: %s", p, why)
				}
			}
		})
	}
}

// TestClosureCacheNoFeed: without a feed every Get computes.
func TestClosureCacheNoFeed(t *testing.T) {
	_, k, _ := newTestCache(t, map[string]string{"a": ""})
	k.feed = nil
	k.Get()
	k.Get()
	if k.builds != 2 || k.reuses != 0 {
		t.Fatalf("builds %d reuses %d, want 2 and 0", k.builds, k.reuses)
	}
}

// TestClosureCacheRacy: a trigger changed just before the build is not
// vouched for by its times; the next Get computes again.
func TestClosureCacheRacy(t *testing.T) {
	ws, k, _ := newTestCache(t, map[string]string{".git/config": "", ".husky/pre-commit": "sh a.sh\n"})
	write(t, ws, ".husky/pre-commit", "sh b.sh\n")
	k.Get()
	k.Get()
	if k.reuses != 0 {
		t.Fatal("a closure built within racyWindow of a trigger's change was reused")
	}
}

// BenchmarkClosureCache: the closure of a 20,000-entry workspace with a
// few triggers, computed every time (uncached) and through the cache
// after nothing changed, after a regular file changed, and after a
// trigger was edited; each cached case reports its speedup over uncached.
func BenchmarkClosureCache(b *testing.B) {
	files := map[string]string{
		".git/config":       "[core]\n\thooksPath = .husky\n",
		".husky/pre-commit": "npm test\nsh scripts/lint.sh\n",
		".envrc":            "source_env_if_exists .envrc.local\ndotenv\n",
		"scripts/lint.sh":   "",
		"package.json":      `{"scripts":{"test":"true"}}`,
		"pkg/.claude":       "-> ../shared",
		"shared/x":          "",
	}
	for d := 0; d < 1000; d++ {
		for f := 0; f < 19; f++ {
			files[fmt.Sprintf("src/d%04d/f%02d.go", d, f)] = "package x\n"
		}
	}
	ws, k, feed := newTestCache(b, files)
	start := time.Now()
	const n0 = 5
	for i := 0; i < n0; i++ {
		k.build()
	}
	uncached := float64(time.Since(start).Nanoseconds()) / n0
	b.Logf("uncached: %.2f ms per closure", uncached/1e6)
	run := func(name string, change func(i int)) {
		b.Run(name, func(b *testing.B) {
			k.Get()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				change(i)
				k.Get()
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(uncached/per, "x-faster")
			b.Logf("%s: %.3f ms per Get, %.0fx faster than uncached %.2f ms", name, per/1e6, uncached/per, uncached/1e6)
		})
	}
	run("unchanged", func(int) {})
	run("file-changed", func(i int) {
		p := fmt.Sprintf("src/d%04d/new.go", i%1000)
		write(b, ws, p, "package x\n")
		feed.changed(p)
	})
	run("trigger-edited", func(i int) {
		write(b, ws, ".husky/pre-commit", fmt.Sprintf("npm test\nsh scripts/lint.sh # %d\n", i))
	})
}

// TestClosureCacheRunGlob: a new match of a glob a trigger runs
// (`for f in env.d/*.sh; do . "$f"; done`) makes the kept closure stale:
// the glob's directory listing is one of the build's observations.
func TestClosureCacheRunGlob(t *testing.T) {
	ws, k, feed := newTestCache(t, map[string]string{
		".envrc":     "for f in env.d/*.sh; do . \"$f\"; done\n",
		"env.d/a.sh": "",
	})
	k.Get()
	write(t, ws, "env.d/b.sh", "")
	feed.changed("env.d/b.sh")
	c := k.Get()
	if k.reuses != 0 {
		t.Fatalf("the closure was reused after a new match of a run glob")
	}
	for _, p := range []string{"env.d/a.sh", "env.d/b.sh"} {
		if _, ok := c.Match(p); !ok {
			t.Errorf("%s is not protected", p)
		}
	}
}

// TestClosureCacheOwnerConfig: the owner's git config outside the
// workspace is read by every build but no change feed covers it; a new
// core.hooksPath there must not be missed by a kept closure.
func TestClosureCacheOwnerConfig(t *testing.T) {
	ws, root := plant(t, map[string]string{".git/config": "[core]\n\tbare = false\n", "owner-hooks/pre-commit": "true\n"})
	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, []byte("[user]\n\tname = x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prot := defaultProtection()
	feed := &scriptedFeed{paths: map[string]bool{}}
	k := &ClosureCache{ws: ws, feed: feed.take, build: func() *Closure {
		return prot.Closure(root, ClosureOptions{Workspace: ws, IsGitDir: GitDirTest(ws), GlobalGitConfig: []string{global}})
	}}
	time.Sleep(racyWindow + 50*time.Millisecond)
	k.Get() // subscribes
	if _, ok := k.Get().Match("owner-hooks/pre-commit"); ok {
		t.Fatal("owner-hooks/pre-commit protected before any hooksPath names it")
	}
	if err := os.WriteFile(global, []byte("[core]\n\thooksPath = "+ws+"/owner-hooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Get().Match("owner-hooks/pre-commit"); !ok {
		t.Fatal("a hooksPath set in the owner's git config is missed by the kept closure")
	}
}
