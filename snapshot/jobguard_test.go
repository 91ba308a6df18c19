package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

// waitGone polls until rel no longer exists in ws, failing after within.
func waitGone(t *testing.T, ws, rel string, made time.Time, within time.Duration) {
	t.Helper()
	for {
		if _, err := os.Lstat(filepath.Join(ws, rel)); os.IsNotExist(err) {
			t.Logf("%s gone after %v", rel, time.Since(made).Round(time.Millisecond))
			return
		}
		if time.Since(made) > within {
			t.Fatalf("%s still exists %v after it was made, while the job runs", rel, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLiveGuardRevertsJobPlants: while a background job is open, a change
// to a protected path is reverted within a second of being made, with no
// call in between; the job's entry lists it as reverted, not as a change;
// an approved Write of a protected path made meanwhile stays.
func TestLiveGuardRevertsJobPlants(t *testing.T) {
	for _, mode := range []string{snapshot.CaptureAuto, snapshot.CaptureScan} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			ws, state := t.TempDir(), t.TempDir()
			write(t, ws, "main.go", "package main\n")
			prot := func(rel string) (string, bool) {
				if r, ok := protect(rel); ok {
					return r, ok
				}
				if rel == ".vscode" || filepath.Dir(rel) == ".vscode" {
					return rel + " is an editor config", true
				}
				return "", false
			}
			st, err := snapshot.Open(ctx, state, ws, snapshot.WithChangeCapture(mode),
				snapshot.WithProtection(func() snapshot.ProtectFunc { return prot }))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if mode == snapshot.CaptureAuto && os.Geteuid() == 0 && st.CaptureStats().Mode != "watch" {
				t.Fatalf("no watcher as root: %+v", st.CaptureStats())
			}
			first, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
			if err != nil {
				t.Fatal(err)
			}
			first.Finish(ctx)

			job, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
			if err != nil {
				t.Fatal(err)
			}
			made := time.Now()
			write(t, ws, ".vscode/tasks.json", `{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}`)
			write(t, ws, "sub/.envrc", "touch /tmp/pwned\n")
			write(t, ws, "out.txt", "work\n")
			waitGone(t, ws, ".vscode/tasks.json", made, time.Second)
			waitGone(t, ws, "sub/.envrc", made, time.Second)
			if got := read(ws, "out.txt"); got != "work\n" {
				t.Fatalf("the job's ordinary work was touched: %q", got)
			}

			// An approved Write of a protected path while the job runs.
			w, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(filepath.Join(ws, ".envrc")))
			if err != nil {
				t.Fatal(err)
			}
			w.SetKeep(func(_ context.Context, ch []snapshot.Protected) []string {
				var keep []string
				for _, c := range ch {
					keep = append(keep, c.Path)
				}
				return keep
			})
			write(t, ws, ".envrc", "approved\n")
			if _, err := w.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1200 * time.Millisecond)
			if got := read(ws, ".envrc"); got != "approved\n" {
				t.Fatalf("the approved Write was reverted: %q", got)
			}

			e, err := job.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// An empty .vscode may stay (the sweep may have seen it
			// before the file in it: an empty directory runs nothing).
			if got := slices.DeleteFunc(paths(e.Changes), func(p string) bool { return p == ".vscode" }); !slices.Equal(got, []string{"out.txt", "sub"}) {
				t.Fatalf("job's changes = %v, want out.txt and sub (the plant inside it was reverted)", got)
			}
			var rev []string
			for _, r := range e.Reverted {
				rev = append(rev, r.Path)
			}
			for _, want := range []string{".vscode/tasks.json", "sub/.envrc"} {
				if !slices.Contains(rev, want) {
					t.Errorf("reverted = %v, missing %s", rev, want)
				}
			}
		})
	}
}

// While a foreground shell command runs, the live guard leaves the
// workspace alone: that command's protected change is judged when it
// returns, where a person may approve keeping it.
func TestLiveGuardWaitsForForegroundCommand(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	write(t, ws, "main.go", "package main\n")
	st, err := snapshot.Open(ctx, state, ws, snapshot.WithChangeCapture(snapshot.CaptureAuto),
		snapshot.WithProtection(func() snapshot.ProtectFunc { return protect }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	first.Finish(ctx)
	job, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	fg, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	fg.SetKeep(func(_ context.Context, ch []snapshot.Protected) []string {
		var keep []string
		for _, c := range ch {
			keep = append(keep, c.Path)
		}
		return keep
	})
	write(t, ws, "app/.envrc", "approved\n")
	time.Sleep(1200 * time.Millisecond)
	if got := read(ws, "app/.envrc"); got != "approved\n" {
		t.Fatalf("the live guard reverted a running foreground command's change: %q", got)
	}
	e, err := fg.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(paths(e.Changes), "app/.envrc") {
		t.Fatalf("the approved change is not the foreground call's: %v", paths(e.Changes))
	}
	time.Sleep(1200 * time.Millisecond)
	if got := read(ws, "app/.envrc"); got != "approved\n" {
		t.Fatalf("the live guard reverted an approved change after the command returned: %q", got)
	}
	if _, err := job.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}
