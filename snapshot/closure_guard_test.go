package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
)

// TestClosureGuard: with the configured protection, a shell call's
// change to what a present trigger runs (the husky hook's package.json
// scripts, the file .envrc loads, the target of a symlinked .claude, a
// rebase todo with exec) is reverted; a dependency-only package.json
// change, the reflog and refs of a commit and a rebase todo without exec
// are kept.
func TestClosureGuard(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
	write(t, ws, ".git/config", "[core]\n\thooksPath = .husky/_\n")
	write(t, ws, ".git/refs/heads/main", "1111\n")
	write(t, ws, ".git/logs/HEAD", "0000 1111 commit: init\n")
	write(t, ws, ".husky/pre-commit", "npm test\n")
	pkg := `{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"1"}}`
	write(t, ws, "package.json", pkg)
	write(t, ws, ".envrc", "source_env_if_exists .envrc.local\n")
	must(t, os.MkdirAll(filepath.Join(ws, "pkg", "shared-claude"), 0o755))
	must(t, os.Symlink("shared-claude", filepath.Join(ws, "pkg", ".claude")))
	cfg := config.Default()
	cfg.Workspace = ws
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(snapshot.ProtectConfig(&cfg)),
		snapshot.WithContentProtection(snapshot.ContentConfig(&cfg)))
	must(t, err)

	tests := []struct {
		name     string
		act      func()
		journal  []string
		reverted []string
		check    func(t *testing.T)
	}{
		{
			name: "scripts changed while husky is present",
			act: func() {
				write(t, ws, "package.json", `{"name":"x","scripts":{"test":"touch /tmp/pwned"},"dependencies":{"a":"1"}}`)
			},
			reverted: []string{"package.json"},
			check: func(t *testing.T) {
				if got := read(ws, "package.json"); got != pkg {
					t.Errorf("package.json = %q", got)
				}
			},
		},
		{
			name: "dependencies only",
			act: func() {
				write(t, ws, "package.json", `{"name":"x","scripts":{"test":"node t.js"},"dependencies":{"a":"2","b":"1"}}`)
			},
			journal: []string{"package.json"},
		},
		{
			name: "a file the .envrc loads, and a symlinked .claude's target",
			act: func() {
				write(t, ws, ".envrc.local", "export BASH_ENV=x\n")
				write(t, ws, "pkg/shared-claude/settings.json", "{}")
			},
			reverted: []string{".envrc.local", "pkg/shared-claude/settings.json"},
		},
		{
			name: "a commit's refs and reflog",
			act: func() {
				write(t, ws, ".git/refs/heads/main", "2222\n")
				write(t, ws, ".git/logs/HEAD", "0000 1111 commit: init\n1111 2222 commit: two\n")
				write(t, ws, ".git/logs/refs/heads/main", "1111 2222 commit: two\n")
				write(t, ws, ".git/ORIG_HEAD", "1111\n")
				write(t, ws, ".git/refs/stash", "3333\n")
			},
			journal: []string{".git/ORIG_HEAD", ".git/logs/HEAD", ".git/logs/refs", ".git/logs/refs/heads", ".git/logs/refs/heads/main", ".git/refs/heads/main", ".git/refs/stash"},
		},
		{
			name:    "a rebase stopped on a conflict",
			act:     func() { write(t, ws, ".git/rebase-merge/git-rebase-todo", "pick 2222 two\n") },
			journal: []string{".git/rebase-merge", ".git/rebase-merge/git-rebase-todo"},
		},
		{
			name:     "an exec line planted in the todo",
			act:      func() { write(t, ws, ".git/rebase-merge/git-rebase-todo", "pick 2222 two\nexec touch /tmp/pwned\n") },
			reverted: []string{".git/rebase-merge/git-rebase-todo"},
		},
		{
			name: "the hook runner removed while scripts change: judged after the revert",
			act: func() {
				must(t, os.RemoveAll(filepath.Join(ws, ".husky")))
				write(t, ws, "package.json", `{"scripts":{"test":"evil"}}`)
			},
			reverted: []string{".husky", ".husky/pre-commit", "package.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
			must(t, err)
			tt.act()
			e, err := call.Finish(ctx)
			must(t, err)
			if e.RevertError != "" {
				t.Fatalf("revert failed: %s", e.RevertError)
			}
			if got := paths(e.Changes); !slices.Equal(got, tt.journal) {
				t.Errorf("journaled %v, want %v", got, tt.journal)
			}
			var rev []string
			for _, r := range e.Reverted {
				rev = append(rev, r.Path)
				if r.Reason == "" {
					t.Errorf("%s reverted without a reason", r.Path)
				}
			}
			if !slices.Equal(rev, tt.reverted) {
				t.Errorf("reverted %v, want %v", rev, tt.reverted)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}
