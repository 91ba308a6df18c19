package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveBeneath(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"src/pkg", ".agentbox", ".git/hooks", "secrets"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(ws, "src/a.go"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "secrets/key"), nil, 0o644))
	links := map[string]string{
		"lib":           "src",
		"abs":           filepath.Join(ws, "src"),
		"conf":          ".agentbox",
		"hooks":         ".git/hooks",
		"src/pkg/up":    "../..",
		"chain":         "lib",
		"key":           "secrets/key",
		"dangling":      "src/new.go",
		"danglingdeep":  "nodir/../secrets/x",
		"out":           "/etc",
		"outrel":        "../..",
		"outdangling":   "nodir/../../x",
		"loop1":         "loop2",
		"loop2":         "loop1",
		"src/pkg/inner": "../../secrets",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, l)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		path, want string // relative to ws; want "" means an error
		leaves     bool
	}{
		{".", ".", false},
		{"src/a.go", "src/a.go", false},
		{"new.go", "new.go", false},
		{"lib", "src", false},
		{"lib/a.go", "src/a.go", false},
		{"lib/new.go", "src/new.go", false},           // a new file resolves through its parent
		{"lib/newdir/x.go", "src/newdir/x.go", false}, // so does a new directory
		{"abs/a.go", "src/a.go", false},
		{"chain/a.go", "src/a.go", false},
		{"conf/config.yaml", ".agentbox/config.yaml", false},
		{"hooks/pre-commit", ".git/hooks/pre-commit", false},
		{"src/pkg/up/secrets/key", "secrets/key", false},
		{"src/pkg/inner/key", "secrets/key", false},
		{"key", "secrets/key", false},
		{"dangling", "src/new.go", false}, // a dangling symlink resolves through its target
		{"danglingdeep", "secrets/x", false},
		{"src/a.go/x", "src/a.go/x", false}, // below a file: as written
		{"out", "", true},
		{"out/passwd", "", true},
		{"outrel/x", "", true},
		{"outdangling", "", true},
		{"loop1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := ResolveBeneath(root, ws, filepath.Join(ws, tt.path))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("resolved to %s, want an error", got)
				}
				if errors.Is(err, ErrLeavesRoot) != tt.leaves {
					t.Fatalf("err %v: ErrLeavesRoot %v, want %v", err, !tt.leaves, tt.leaves)
				}
				return
			}
			if want := filepath.Join(ws, tt.want); err != nil || got != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		})
	}
}

// The pipeline's rules see the resolution: a symlink cannot carry a
// Read, Write or Edit past a path rule, nor out of the workspace.
func TestRealPathMessages(t *testing.T) {
	ws := t.TempDir()
	must(t, os.Symlink("/etc", filepath.Join(ws, "etc")))
	root, _ := os.OpenRoot(ws)
	defer root.Close()
	e := &Env{Workspace: ws, Root: root}
	_, err := e.RealPath(filepath.Join(ws, "etc/passwd"))
	te := AsToolError(err)
	if te.Kind != ErrPermissionDenied || !strings.Contains(te.Message, "points to /etc") || !strings.Contains(te.Message, "out of the workspace") {
		t.Fatalf("err %v", err)
	}
	if got, err := e.RealPath("/elsewhere/x"); got != "/elsewhere/x" || err != nil {
		t.Fatalf("a path outside every root: %q %v", got, err)
	}
}

// BenchmarkResolveBeneath is what the rules stage adds to a call per path
// (a path five directories deep, no symlinks).
func BenchmarkResolveBeneath(b *testing.B) {
	ws := b.TempDir()
	deep := filepath.Join(ws, "a/b/c/d")
	must(b, os.MkdirAll(deep, 0o755))
	must(b, os.WriteFile(filepath.Join(deep, "f.go"), nil, 0o644))
	root, _ := os.OpenRoot(ws)
	defer root.Close()
	p := filepath.Join(deep, "f.go")
	for b.Loop() {
		if _, err := ResolveBeneath(root, ws, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLstatBaseline is one os.Root.Lstat of the same path, for scale.
func BenchmarkLstatBaseline(b *testing.B) {
	ws := b.TempDir()
	deep := filepath.Join(ws, "a/b/c/d")
	must(b, os.MkdirAll(deep, 0o755))
	must(b, os.WriteFile(filepath.Join(deep, "f.go"), nil, 0o644))
	root, _ := os.OpenRoot(ws)
	defer root.Close()
	for b.Loop() {
		if _, err := root.Lstat("a/b/c/d/f.go"); err != nil {
			b.Fatal(err)
		}
	}
}
