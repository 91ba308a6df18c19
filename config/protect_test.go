package config

import "testing"

func TestProtectionMatch(t *testing.T) {
	p := Protection{patterns: append(DefaultProtectedPaths, "secrets/*.key", "build/**/hook")}
	bare := func(dir string) bool { return dir == "evil" || dir == "a/b" }
	tests := []struct {
		rel  string
		want bool
	}{
		{".git/config", true},
		{".roo/mcp.json", true},
		{".kilocode/mcp.json", true},
		{".kiro/settings/mcp.json", true},
		{".amazonq/mcp.json", true},
		{".opencode/plugins/x.js", true},
		{"opencode.json", true},
		{"opencode.jsonc", true},
		{"crush.json", true},
		{".crush.json", true},
		{"src/roo.go", false},
		{".git/hooks/pre-commit", true},
		{".git/hooks", true},
		{".git/info/attributes", true},
		{".git/commondir", true},
		{".git/config.worktree", true},
		{".git/objects/info/alternates", true},
		{".git/objects/info/http-alternates", true},
		{".git/objects/info/commit-graph", false},
		{".git/objects/info/packs", false},
		{".git/objects/ab/cdef", false},
		{".git/refs/heads/main", false},
		{".git/index", false},
		{".git/HEAD", false},
		{".git/logs/HEAD", false},
		{".git/COMMIT_EDITMSG", false},
		{".git/modules/sub/config", true},
		{".git/modules/sub/objects/ab/cd", true},
		{".git/worktrees/wt/gitdir", true},
		{".git", true},
		{"sub/.git", true},
		{"sub/.git/config", true},
		{"deep/er/sub/.git/hooks/post-checkout", true},
		{"sub/.git/objects/12/34", false},
		{"evil/config", true},
		{"evil/hooks/x", true},
		{"evil/HEAD", true},
		{"evil/objects/ab", true},
		{"evil/README", false},
		{"a/b/config", true},
		{"config", false},
		{"src/config", false},
		{".vscode", true},
		{".vscode/tasks.json", true},
		{"pkg/.vscode/settings.json", true},
		{".envrc", true},
		{"sub/dir/.envrc", true},
		{".envrc.bak", false},
		{"my.envrc", false},
		{".cargo/config.toml", true},
		{"sub/.cargo/config.toml", true},
		{".hg/hgrc", true},
		{".agentbox/config.yaml", true},
		{"secrets/a.key", true},
		{"secrets/a.txt", false},
		{"x/secrets/a.key", false},
		{"build/x/y/hook", true},
		{"build/hook/inner", true},
		{"src/main.go", false},
		{"README.md", false},
		{"./.git/./config", true},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			why, got := p.Match(tt.rel, bare)
			if got != tt.want {
				t.Fatalf("Match(%q) = %v (%s), want %v", tt.rel, got, why, tt.want)
			}
			if got && why == "" {
				t.Fatal("protected without a reason")
			}
		})
	}
}

func TestProtectionZeroValueGuardsGit(t *testing.T) {
	var p Protection
	if _, ok := p.Match(".git/hooks/pre-push", nil); !ok {
		t.Fatal("zero Protection must still protect git metadata")
	}
	if _, ok := p.Match(".vscode/tasks.json", nil); ok {
		t.Fatal("zero Protection has no patterns")
	}
}

// TestProtectionGitStateRunsNothing: below a .git directory, git's own
// state is judged by the .git rules alone: .git/logs has a HEAD and refs
// like a repository, yet a reflog runs nothing; a bare repository
// elsewhere is still protected.
func TestProtectionGitStateRunsNothing(t *testing.T) {
	p := Protection{patterns: DefaultProtectedPaths}
	looksLikeRepo := func(string) bool { return true }
	for _, rel := range []string{".git/logs/HEAD", ".git/logs/refs/heads/main", ".git/logs/refs/stash", ".git/refs/heads/x",
		".git/ORIG_HEAD", ".git/rebase-merge/done", "sub/.git/logs/HEAD"} {
		if why, ok := p.Match(rel, looksLikeRepo); ok {
			t.Errorf("%s is protected: %s", rel, why)
		}
	}
	for _, rel := range []string{"bare/HEAD", "bare/config", ".git/hooks/x", ".git/modules/m/HEAD"} {
		if _, ok := p.Match(rel, looksLikeRepo); !ok {
			t.Errorf("%s is not protected", rel)
		}
	}
}
