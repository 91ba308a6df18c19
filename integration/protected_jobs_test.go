//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools"
)

// Protected paths and background jobs: a job runs beside other calls
// and outlives its own, so what it changes in a protected path must still
// be judged, reverted and reported, and a job judged read-only must not
// write. Each test drives the real tool system and engine, and fails
// while the hole it describes is open.

// newRT2Harness is the builtin harness with an operator who approves every
// command (background jobs included) but never approves keeping a change
// to a protected path.
func newRT2Harness(t *testing.T) *builtinHarness {
	t.Helper()
	return newHarnessWith(t, "redteam2", tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
		if strings.Contains(r.Summary, "protected") {
			return tools.Approval{Allow: false, By: "test"}, nil
		}
		return tools.Approval{Allow: true, By: "test"}, nil
	}))
}

// TestRedteam2ProtectedSurvivesOverlappingJobs: two approved background
// jobs make a protected file survive. Job A creates app/.cargo/config.toml
// (a rustc wrapper: cargo, and rust-analyzer in an editor, run it). Job B
// starts while the file exists, so B's pre-scan has it. A ends: its
// changeset has the file as added, and the guard deletes it. B then writes
// the very same content back and ends: B's changeset compares its
// pre-scan (file present, same content) with the end (file present, same
// content) and sees no change, so nothing is reverted and nothing is
// journaled. Changes made to the workspace outside any call (by a running
// job, before another call's pre-scan) are never judged.
//
// Fix: judge drift. Every pre-scan (Begin and BeginDetached) diffs the
// scan against the saved index (the state after the last journaled call);
// changes to protected paths found there were made by a running job
// outside any call and must be reverted (or journaled with a RevertError)
// under the same rules, before the new call's pre-image is taken. A
// simpler, stricter alternative: compute a detached call's protected
// changes against the index at its Finish time as well as its own
// pre-scan (pre ∪ current index), so a path that was reverted since the
// job began counts as absent for it.
func TestRedteam2ProtectedSurvivesOverlappingJobs(t *testing.T) {
	h := newRT2Harness(t)
	tasks := filepath.Join(h.ws, "app", ".cargo", "config.toml")
	const payload = `[build]\nrustc-wrapper = "/tmp/agentbox-redteam2-pwned"\n`
	// Not a root-level path: those that exist when a container starts are
	// mounted read-only in it, so B could not write this back at the
	// root. Any protected path below the root, or one created in a
	// directory that did not exist when B's container started, works.
	// Job A: creates the file, then waits for a go-ahead file and exits.
	ra := h.ok(h.call("Bash", map[string]any{
		"command":           "mkdir -p app/.cargo && printf '" + payload + "' > app/.cargo/config.toml && touch a.wrote && while [ ! -e a.go ]; do sleep 0.1; done; rm a.go",
		"run_in_background": true,
	}))
	idA, _ := ra.Meta["bash_id"].(string)
	// The live guard reverts the file within milliseconds: wait for the
	// job's word that it wrote it, not for the file.
	h.waitFor("job A to write the file", func() bool { return exists(filepath.Join(h.ws, "a.wrote")) })
	// Job B: begins while the file exists; waits until A's revert removed
	// it, then writes it back as it was.
	rb := h.ok(h.call("Bash", map[string]any{
		"command":           "while [ -e app/.cargo/config.toml ]; do sleep 0.1; done; sleep 0.5; mkdir -p app/.cargo && printf '" + payload + "' > app/.cargo/config.toml; echo b-done",
		"run_in_background": true,
	}))
	idB, _ := rb.Meta["bash_id"].(string)
	h.put("a.go", "", 0o644)
	oa := h.waitJob(idA)
	t.Logf("job A: %s meta %v", oa.Content, oa.Meta["reverted"])
	ob := h.waitJob(idB)
	t.Logf("job B: %s meta reverted=%v changes=%v", ob.Content, ob.Meta["reverted"], ob.Meta["changes"])
	es, err := h.store().List(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Logf("entry %s detached=%v changes=%d reverted=%v revert_error=%q", e.ID, e.Detached, len(e.Changes), e.Reverted, e.RevertError)
	}
	if exists(tasks) {
		t.Errorf("a protected file written by two overlapping background jobs survived: %s = %q", tasks, h.content(tasks))
	}
}

// TestRedteam2JobRevertIsReported: a background job that creates a
// protected path has the change reverted when it ends, but BashOutput
// (and KillShell, and shutdown) said only "recorded as call N": neither
// the model nor the operator learns that a protected change was reverted,
// nor — when the revert failed (disk full, a directory that cannot be
// emptied) — the RevertError that the foreground path prints as a
// WARNING. A failed revert of a background job was silent.
//
// Fix: tools.JobJournalNote (and withJournal in tools/builtin/bash.go)
// report st.Journal.Reverted and st.Journal.RevertError the way
// reportReverted does for foreground calls (same text, meta "reverted"
// and "revert_error"); FinishAll at shutdown logs a RevertError at
// Error level.
func TestRedteam2JobRevertIsReported(t *testing.T) {
	h := newRT2Harness(t)
	r := h.ok(h.call("Bash", map[string]any{
		"command":           "mkdir -p app/.cargo && echo '[build]' > app/.cargo/config.toml",
		"run_in_background": true,
	}))
	id, _ := r.Meta["bash_id"].(string)
	o := h.waitJob(id)
	if exists(filepath.Join(h.ws, "app", ".cargo", "config.toml")) {
		t.Fatalf("the job's protected change was not reverted: %s", o.Content)
	}
	if !strings.Contains(o.Content, "config.toml") || o.Meta["reverted"] == nil {
		t.Errorf("BashOutput of the job does not report the reverted protected change: %q meta %v", o.Content, o.Meta)
	}
}

// TestRedteam2ReadOnlyBackgroundJob: a background job whose command is
// judged read-only runs without a snapshot, so its container must mount
// the workspace read-only like a foreground read-only call (readOnlyJobs).
// `git status` is read-only by the classifier but refreshes .git/index
// when file stats changed; in a writable container it would write there.
// Blocked: the index stays as it was.
func TestRedteam2ReadOnlyBackgroundJob(t *testing.T) {
	h := newRT2Harness(t)
	h.put("a.txt", "a\n", 0o644)
	// The repository is the operator's (made on the host: a new .git is a
	// protected change a call cannot keep).
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", h.ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	must(t, exec.Command("chown", "-R", strconv.Itoa(wsUID)+":"+strconv.Itoa(wsGID), h.ws).Run())
	// Stale stat information: status wants to refresh the index.
	time.Sleep(1100 * time.Millisecond)
	h.put("a.txt", "a\n", 0o644)
	idx := filepath.Join(h.ws, ".git", "index")
	before, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	r := h.ok(h.call("Bash", `{"command":"git status --porcelain","run_in_background":true}`))
	id, _ := r.Meta["bash_id"].(string)
	o := h.waitJob(id)
	t.Logf("job: %s", o.Content)
	after, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("a read-only judged background job wrote .git/index (%v → %v)", before.ModTime(), after.ModTime())
	}
	if strings.Contains(o.Content, "recorded as call") {
		t.Errorf("a read-only job was snapshotted as a mutating one: %q", o.Content)
	}
}

// TestRedteam2RevertRacesRename: the guard reverts a protected change by
// path (remove app/.cargo/config.toml) and checks it by path, while an
// approved background job in another container keeps exchanging the
// directory app/.cargo with a sibling app/.cargo.alt into which the call
// also wrote the file. The foreground call is reported as reverted (true
// for the path at that moment), yet the content is at app/.cargo one
// rename later: the job put it there, so the job's own changeset must
// catch it when the job ends. Blocked: KillShell finishes the job's
// snapshot and its guard removes the file. The protected content is on
// disk for the job's lifetime (minutes for an approved long job: the
// window), and TestRedteam2ProtectedSurvivesOverlappingJobs shows how a
// second job makes it permanent.
func TestRedteam2RevertRacesRename(t *testing.T) {
	h := newRT2Harness(t)
	h.put("app/.cargo/.keep", "", 0o644)
	h.put("app/.cargo.alt/.keep", "", 0o644)
	must(t, os.Chown(filepath.Join(h.ws, "app"), wsUID, wsGID))
	// The swapper: exchanges the two directories until stop appears, and
	// stops with a config.toml at app/.cargo if either has one.
	r := h.ok(h.call("Bash", map[string]any{
		"command": "cd app; while [ ! -e ../stop ]; do mv .cargo .t && mv .cargo.alt .cargo && mv .t .cargo.alt; done; " +
			"if [ ! -e .cargo/config.toml ] && [ -e .cargo.alt/config.toml ]; then mv .cargo .t && mv .cargo.alt .cargo && mv .t .cargo.alt; fi; touch ../stopped; sleep 120",
		"run_in_background": true,
	}))
	job, _ := r.Meta["bash_id"].(string)
	file := filepath.Join(h.ws, "app", ".cargo", "config.toml")
	o := h.call("Bash", map[string]any{"command": "for d in app/.cargo app/.cargo.alt app/.cargo app/.cargo.alt app/.t; do echo '[build]' > $d/config.toml 2>/dev/null; done; true"})
	t.Logf("call: reverted=%v revert_error=%v changes=%v", o.Meta["reverted"], o.Meta["revert_error"], o.Meta["changes"])
	h.put("stop", "", 0o644)
	h.waitFor("the swapper to stop", func() bool { return exists(filepath.Join(h.ws, "stopped")) })
	if !exists(file) {
		t.Logf("the race was not won this time (no config.toml at app/.cargo after the call)")
	}
	k := h.call("KillShell", map[string]any{"shell_id": job})
	t.Logf("KillShell: %s meta %v", k.Content, k.Meta)
	if exists(file) {
		t.Errorf("%s survived the end of the job that put it there: %q", file, h.content(file))
	}
}
