package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeHome makes a home with the caches named (relative paths) created.
func fakeHome(t *testing.T, dirs ...string) string {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func kindsAndPaths(cs []DepCache, home string) []string {
	var out []string
	for _, c := range cs {
		s := c.Kind + ":" + strings.TrimPrefix(c.Path, home+"/")
		if c.InWorkspace {
			s += " (in workspace)"
		}
		out = append(out, s)
	}
	return out
}

func TestDetectCaches(t *testing.T) {
	all := []string{"go/pkg/mod", ".cargo/registry", ".cargo/git", ".npm/_cacache", ".local/share/pnpm/store"}
	tests := []struct {
		name    string
		dirs    []string
		entries []string
		setup   func(t *testing.T, home string, o *CacheOptions)
		want    []string
		skipHas string // a skipped entry's reason contains this
	}{
		{name: "auto finds every kind", dirs: all, entries: []string{"auto"},
			want: []string{"go:go/pkg/mod", "cargo:.cargo/registry", "cargo:.cargo/git", "npm:.npm/_cacache", "pnpm:.local/share/pnpm/store"}},
		{name: "missing ones are left out silently", dirs: []string{"go/pkg/mod"}, entries: []string{"auto"}, want: []string{"go:go/pkg/mod"}},
		{name: "disable a kind", dirs: all, entries: []string{"auto", "-cargo", "-pnpm"}, want: []string{"go:go/pkg/mod", "npm:.npm/_cacache"}},
		{name: "only one kind", dirs: all, entries: []string{"npm"}, want: []string{"npm:.npm/_cacache"}},
		{name: "none", dirs: all, entries: []string{}, want: nil},
		{name: "go env file GOPATH", dirs: []string{"gp/pkg/mod", ".config/go"}, entries: []string{"auto"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				must(t, os.WriteFile(filepath.Join(home, ".config/go/env"), []byte("GOPATH="+home+"/gp\n"), 0o644))
			}, want: []string{"go:gp/pkg/mod"}},
		{name: "owner's GOMODCACHE", dirs: []string{"mc"}, entries: []string{"go"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				o.Getenv = func(k string) (string, bool) {
					if k == "GOMODCACHE" {
						return home + "/mc", true
					}
					return "", false
				}
			}, want: []string{"go:mc"}},
		{name: "credentials beside the cache refuse it", dirs: []string{".npm/_cacache"}, entries: []string{"auto"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				must(t, os.WriteFile(filepath.Join(home, ".npm/_cacache/.npmrc"), []byte("//r/:_authToken=x"), 0o600))
			}, want: nil, skipHas: ".npmrc"},
		{name: "credentials.toml is never under the registry", dirs: []string{".cargo/registry"}, entries: []string{"auto"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				must(t, os.WriteFile(filepath.Join(home, ".cargo/credentials.toml"), []byte("token"), 0o600))
			}, want: []string{"cargo:.cargo/registry"}},
		{name: "the home itself is refused", dirs: []string{"x"}, entries: []string{"HOME"}, want: nil, skipHas: "home"},
		{name: "a denied path is refused", dirs: []string{".ssh/cache"}, entries: []string{"HOME/.ssh/cache"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				o.Denied = func(p string) bool { return strings.Contains(p, "/.ssh") }
			}, want: nil, skipHas: "secrets"},
		{name: "a cache inside the workspace is not mounted again", dirs: []string{"ws/go/pkg/mod"}, entries: []string{"go"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.Workspace = home + "/ws"; o.Home = home + "/ws" }, want: []string{"go:ws/go/pkg/mod (in workspace)"}},
		{name: "the workspace itself is no cache", dirs: []string{"ws"}, entries: []string{"HOME/ws"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.Workspace = home + "/ws" }, want: nil, skipHas: "contains the workspace"},
		{name: "a cache holding the workspace is refused", dirs: []string{"a/ws"}, entries: []string{"HOME/a"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.Workspace = home + "/a/ws" }, want: nil, skipHas: "contains the workspace"},
		{name: "a cache holding the state dir is refused", dirs: []string{"a/state"}, entries: []string{"HOME/a"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.StateDir = home + "/a/state" }, want: nil, skipHas: "state dir"},
		{name: "a symlinked cache is mounted at its real path", dirs: []string{"real/mod"}, entries: []string{"go"},
			setup: func(t *testing.T, home string, o *CacheOptions) {
				must(t, os.MkdirAll(home+"/go/pkg", 0o755))
				must(t, os.Symlink(home+"/real/mod", home+"/go/pkg/mod"))
			}, want: []string{"go:real/mod"}},
		{name: "another user's cache is not detected", dirs: []string{"go/pkg/mod"}, entries: []string{"auto"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.UID = os.Getuid() + 1 }, want: nil, skipHas: "not to the workspace owner"},
		{name: "but may be configured by path", dirs: []string{"go/pkg/mod"}, entries: []string{"HOME/go/pkg/mod"},
			setup: func(t *testing.T, home string, o *CacheOptions) { o.UID = os.Getuid() + 1 }, want: []string{"path:go/pkg/mod"}},
		{name: "a configured Go module cache gets Go's environment", dirs: []string{"mc/cache/download"}, entries: []string{"HOME/mc"}, want: []string{"go:mc"}},
		{name: "overlapping entries", dirs: []string{"go/pkg/mod/cache"}, entries: []string{"go", "HOME/go/pkg/mod/cache"}, want: []string{"go:go/pkg/mod"}, skipHas: "overlaps"},
		{name: "a configured path that is missing is reported", entries: []string{"HOME/nope"}, want: nil, skipHas: "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := fakeHome(t, tt.dirs...)
			o := CacheOptions{Home: home, UID: os.Getuid()}
			for _, e := range tt.entries {
				o.Entries = append(o.Entries, strings.Replace(e, "HOME", home, 1))
			}
			if tt.setup != nil {
				tt.setup(t, home, &o)
			}
			got, skipped := DetectCaches(o)
			if g := kindsAndPaths(got, home); !slices.Equal(g, tt.want) {
				t.Errorf("caches = %v, want %v (skipped %+v)", g, tt.want, skipped)
			}
			if tt.skipHas != "" && !slices.ContainsFunc(skipped, func(s SkippedCache) bool { return strings.Contains(s.Reason, tt.skipHas) }) {
				t.Errorf("skipped = %+v, want a reason with %q", skipped, tt.skipHas)
			}
		})
	}
}

func TestToolEnv(t *testing.T) {
	caches := []DepCache{{Kind: "go", Path: "/h/go/pkg/mod", Env: cacheEnv("go", "/h/go/pkg/mod")},
		{Kind: "npm", Path: "/h/.npm/_cacache", Env: cacheEnv("npm", "/h/.npm/_cacache")}}
	env := Env("", nil, nil, ToolEnv(caches, true))
	for _, want := range []string{"GOMODCACHE=/h/go/pkg/mod", "GOPROXY=off", "GOCACHE=" + BuildCacheDir + "/go-build",
		"npm_config_cache=/h/.npm", "npm_config_offline=true", "PIP_CACHE_DIR=" + BuildCacheDir + "/pip"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	env = Env("", nil, nil, ToolEnv(nil, false))
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOCACHE=") || strings.HasPrefix(kv, "GOMODCACHE=") {
			t.Errorf("no caches, yet %s", kv)
		}
	}
}

func TestParseGitUser(t *testing.T) {
	tests := []struct {
		name, text string
		want       GitIdentity
	}{
		{"plain", "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n", GitIdentity{"Ada Lovelace", "ada@example.com"}},
		{"case and quotes", "[User]\nName = \"Ada  \\\"L\\\"\" ; comment\nEMAIL=ada@x # c\n", GitIdentity{`Ada  "L"`, "ada@x"}},
		{"subsection is another section", "[user \"x\"]\nname = No\n[user]\nemail = e@x\n", GitIdentity{"", "e@x"}},
		{"other sections ignored", "[core]\nname = No\n[credential]\nhelper = store\n[alias]\nname = !rm -rf /\n", GitIdentity{}},
		{"last wins", "[user]\nname = A\n[user]\nname = B\n", GitIdentity{"B", ""}},
		{"includes are not followed", "[include]\npath = ~/.secret\n[user]\nname = A\n", GitIdentity{"A", ""}},
		{"control characters refused", "[user]\nname = \"A\\nB\"\nemail = a@b\n", GitIdentity{"", "a@b"}},
		{"continuation refused", "[user]\nname = A \\\n B\n", GitIdentity{}},
		{"section and key on one line", "[user] name = Inline\n", GitIdentity{"Inline", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseGitUser(strings.NewReader(tt.text)); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOwnerGitIdentity(t *testing.T) {
	home := fakeHome(t, ".config/git")
	must(t, os.WriteFile(filepath.Join(home, ".config/git/config"), []byte("[user]\nname = Xdg\nemail = xdg@x\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\nname = Home\n"), 0o644))
	id := OwnerGitIdentity(home)
	if id != (GitIdentity{"Home", "xdg@x"}) {
		t.Fatalf("got %+v", id)
	}
	env := id.Env(GitIdentity{Email: "repo@x"})
	if !slices.Equal(env, []string{"GIT_AUTHOR_NAME=Home", "GIT_COMMITTER_NAME=Home"}) {
		t.Fatalf("env %v", env)
	}
	if OwnerGitIdentity("") != (GitIdentity{}) {
		t.Fatal("no home, yet an identity")
	}
}

func TestBuildCacheTrimAndClear(t *testing.T) {
	dir := t.TempDir()
	c := &BuildCache{Dir: filepath.Join(dir, "cache"), MaxBytes: 900}
	if err := c.Ensure(os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	must(t, os.WriteFile(outside, []byte("keep me"), 0o644))
	now := time.Now()
	for i, name := range []string{"a/old", "a/mid", "b/new"} {
		p := filepath.Join(c.Dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, make([]byte, 400), 0o644))
		ts := now.Add(time.Duration(i-3) * time.Hour)
		must(t, os.Chtimes(p, ts, ts))
	}
	// A symlink planted by a command must be removed as a link, never
	// followed.
	must(t, os.Symlink(outside, filepath.Join(c.Dir, "link")))
	must(t, os.Chtimes(outside, now.Add(-10*time.Hour), now.Add(-10*time.Hour)))
	u, err := c.Usage()
	if err != nil || u.Files != 4 {
		t.Fatalf("usage %+v %v", u, err)
	}
	removed, err := c.Trim()
	if err != nil {
		t.Fatal(err)
	}
	if removed.Files != 2 {
		t.Errorf("removed %+v, want the two oldest", removed)
	}
	for name, want := range map[string]bool{"a/old": false, "a/mid": false, "b/new": true} {
		if _, err := os.Stat(filepath.Join(c.Dir, name)); (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", name, err == nil, want)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me" {
		t.Fatal("trim reached outside the cache")
	}
	if _, ran, _ := c.TrimIfDue(time.Hour); !ran {
		t.Error("first TrimIfDue did not run")
	}
	if _, ran, _ := c.TrimIfDue(time.Hour); ran {
		t.Error("TrimIfDue ran twice within the interval")
	}
	// Clear through a symlinked subdirectory must not follow it.
	must(t, os.Symlink(dir, filepath.Join(c.Dir, "up")))
	if _, err := c.Clear(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(c.Dir)
	if len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me" {
		t.Fatal("clear reached outside the cache")
	}
	if _, err := os.Stat(c.Dir); err != nil {
		t.Fatal("clear removed the cache dir itself")
	}
}

// must fails the test on a fixture step's error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
