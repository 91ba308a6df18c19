//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// TestCaptureSeesContainerWrites runs commands whose writes go through the
// container's bind mount and checks that the fanotify change capture (the
// post-scan of each `agentbox exec` is incremental: its pre-scan made the
// base) journals exactly what a full scan finds: every incremental capture
// is checked against a full scan here (capture_check_every 1), and the
// store's record must show checks and no mismatch.
func TestCaptureSeesContainerWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		// make test runs as root (it starts the engine); a run that
		// cannot exercise the watcher must not pass as if it had.
		t.Fatal("the fanotify watcher needs root: run the integration tests as root")
	}
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(agentbox, append([]string{"--workspace", ws, "--state-dir", state}, args...)...)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost(), "AGENTBOX_SANDBOX_IMAGE="+testImage,
			"AGENTBOX_SNAPSHOT_CHANGE_CAPTURE=auto", "AGENTBOX_SNAPSHOT_CAPTURE_CHECK_EVERY=1")
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, o.String())
		}
		return o.String()
	}
	run("exec", "--", "mkdir -p a/b && echo x > a/b/c && echo y > top && ln top top2 && mv a z && chmod 600 top")
	run("exec", "--", "echo more >> z/b/c && rm top2 && mkdir -p q/r && mv z q/r/ && ln -s q link")
	var hist []struct {
		Changes []struct{ Path, Op string }
	}
	if err := json.Unmarshal([]byte(run("history", "--json")), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 {
		t.Fatalf("history has %d entries, want 2", len(hist))
	}
	got := func(i int) []string {
		var out []string
		for _, c := range hist[i].Changes {
			out = append(out, c.Path+" "+c.Op)
		}
		sort.Strings(out)
		return out
	}
	want1 := []string{"top added", "top2 added", "z added", "z/b added", "z/b/c added"}
	want0 := []string{"link added", "q added", "q/r added", "q/r/z added", "q/r/z/b added", "q/r/z/b/c added",
		"top2 deleted", "z deleted", "z/b deleted", "z/b/c deleted"}
	if g := got(1); !equalStrings(g, want1) {
		t.Errorf("first call: %v, want %v", g, want1)
	}
	if g := got(0); !equalStrings(g, want0) {
		t.Errorf("second call: %v, want %v", g, want0)
	}
	// The record of the checks (written next to the journal).
	var rec struct{ Checks, Mismatches int64 }
	found := false
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "capture.json" {
			data, _ := os.ReadFile(p)
			found = json.Unmarshal(data, &rec) == nil
		}
		return nil
	})
	if !found || rec.Checks < 2 || rec.Mismatches != 0 {
		t.Fatalf("capture record found=%v %+v: want at least 2 checks (one per post-scan) and no mismatch", found, rec)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
