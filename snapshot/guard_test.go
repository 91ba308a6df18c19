package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// protect is a small stand-in for the configured protection: .git's
// config and hooks, and .envrc at any depth.
func protect(rel string) (string, bool) {
	base := filepath.Base(rel)
	switch {
	case rel == ".git/config", rel == ".git/hooks", strings.HasPrefix(rel, ".git/hooks/"), base == ".envrc", strings.HasSuffix(rel, ".cargo/config.toml"),
		base == ".git" && rel != ".git", strings.Contains(rel, "/.git/"):
		return rel + " is protected", true
	}
	return "", false
}

func write(t *testing.T, ws, rel, data string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(ws, rel string) string {
	b, err := os.ReadFile(filepath.Join(ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func paths(cs []snapshot.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}

func TestProtectedChangesAreReverted(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, ".git/config", "[core]\n")
	write(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
	write(t, ws, "src/.envrc", "old\n")
	write(t, ws, "main.go", "package main\n")
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(func() snapshot.ProtectFunc { return protect }))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		act      func()
		keep     []string
		journal  []string
		reverted []string
		check    func(t *testing.T)
	}{
		{
			name: "modify config, plant hook, edit source",
			act: func() {
				write(t, ws, ".git/config", "[core]\n\tfsmonitor = evil\n")
				write(t, ws, ".git/hooks/post-checkout", "#!/bin/sh\nevil\n")
				write(t, ws, "main.go", "package main // edited\n")
			},
			journal:  []string{"main.go"},
			reverted: []string{".git/config", ".git/hooks", ".git/hooks/post-checkout"},
			check: func(t *testing.T) {
				if got := read(ws, ".git/config"); got != "[core]\n" {
					t.Errorf("config = %q", got)
				}
				if _, err := os.Lstat(filepath.Join(ws, ".git/hooks")); !os.IsNotExist(err) {
					t.Errorf("hooks dir left behind: %v", err)
				}
				if got := read(ws, "main.go"); got != "package main // edited\n" {
					t.Errorf("unprotected change lost: %q", got)
				}
			},
		},
		{
			name: "git init in a subdirectory and a nested .envrc deleted",
			act: func() {
				write(t, ws, "sub/.git/config", "[core]\n\tfsmonitor = evil\n")
				write(t, ws, "sub/.git/HEAD", "ref: refs/heads/main\n")
				write(t, ws, "sub/.git/objects/ab/cd", "x")
				write(t, ws, "sub/.git-x", "sorts between .git and its children\n")
				write(t, ws, "sub/file.txt", "kept\n")
				must(t, os.Remove(filepath.Join(ws, "src/.envrc")))
			},
			journal:  []string{"sub", "sub/.git-x", "sub/file.txt"},
			reverted: []string{"src/.envrc", "sub/.git", "sub/.git/HEAD", "sub/.git/config", "sub/.git/objects", "sub/.git/objects/ab", "sub/.git/objects/ab/cd"},
			check: func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(ws, "sub/.git")); !os.IsNotExist(err) {
					t.Errorf("nested repository left behind: %v", err)
				}
				if got := read(ws, "src/.envrc"); got != "old\n" {
					t.Errorf("deleted .envrc not restored: %q", got)
				}
			},
		},
		{
			name:    "an approved change is kept and journaled",
			act:     func() { write(t, ws, "src/.envrc", "approved\n") },
			keep:    []string{"src/.envrc"},
			journal: []string{"src/.envrc"},
			check: func(t *testing.T) {
				if got := read(ws, "src/.envrc"); got != "approved\n" {
					t.Errorf(".envrc = %q", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
			if err != nil {
				t.Fatal(err)
			}
			var asked []string
			call.SetKeep(func(ctx context.Context, ps []snapshot.Protected) []string {
				for _, p := range ps {
					if p.Reason == "" {
						t.Errorf("%s without a reason", p.Path)
					}
					asked = append(asked, p.Path)
				}
				return tt.keep
			})
			tt.act()
			e, err := call.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if e.RevertError != "" {
				t.Fatalf("revert failed: %s", e.RevertError)
			}
			if got := paths(e.Changes); !slices.Equal(got, tt.journal) {
				t.Errorf("journaled %v, want %v", got, tt.journal)
			}
			var rev []string
			for _, r := range e.Reverted {
				rev = append(rev, r.Path)
			}
			if !slices.Equal(rev, tt.reverted) {
				t.Errorf("reverted %v, want %v", rev, tt.reverted)
			}
			if len(asked) == 0 {
				t.Error("keep was never asked")
			}
			tt.check(t)
			// The manifest matches the disk: a no-op call finds nothing.
			c2, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
			if err != nil {
				t.Fatal(err)
			}
			e2, err := c2.Finish(ctx)
			if err != nil || len(e2.Changes)+len(e2.Reverted) != 0 {
				t.Errorf("a later call found %v %v (%v)", e2.Changes, e2.Reverted, err)
			}
		})
	}
	// Undoing the journaled parts leaves protected paths alone.
	if _, err := st.Undo(ctx, "", false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
}

// TestProtectedDriftWhileJobRuns: a protected change made outside any call
// while a background job runs (it may be the job's) is reverted when the
// next call begins, instead of being taken into that call's pre-scan;
// with no job running, the user's own edit is left alone.
func TestProtectedDriftWhileJobRuns(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, "main.go", "package main\n")
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithProtection(func() snapshot.ProtectFunc { return protect }))
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	first.Finish(ctx)

	// No job: the user's own .envrc stays.
	write(t, ws, "app/.envrc", "user\n")
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	c.Finish(ctx)
	if got := read(ws, "app/.envrc"); got != "user\n" {
		t.Fatalf("the user's own edit was reverted: %q", got)
	}

	// A job runs; something plants a protected file; the next call's
	// pre-scan must not take it in.
	job, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, "app/.cargo/config.toml", "[build]\nrustc-wrapper = \"/tmp/evil\"\n")
	c, err = st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "app/.cargo/config.toml")); !os.IsNotExist(err) {
		t.Fatalf("protected drift survived the next call's pre-scan: %v", err)
	}
	// The job writes the same bytes again and ends: it is reverted then.
	write(t, ws, "app/.cargo/config.toml", "[build]\nrustc-wrapper = \"/tmp/evil\"\n")
	c.Finish(ctx)
	e, err := job.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "app/.cargo/config.toml")); !os.IsNotExist(err) {
		t.Fatalf("protected file survives overlapping calls (journal %+v)", e)
	}
}
