package snapshot_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

func changedPaths(e snapshot.Entry) []string {
	var ps []string
	for _, c := range e.Changes {
		ps = append(ps, c.Path)
	}
	return ps
}

func writeFile(t *testing.T, ws, rel, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, ws, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// A detached call does not block other calls; what its job changed is
// journaled at Finish as one entry after the calls that ran meanwhile;
// for paths those calls changed too only the job's later change is
// included and an earlier one is reported; undo reverts exactly the job's
// own changes.
func TestDetachedOverlappingForeground(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, ws, "job.txt", "v1")
	writeFile(t, ws, "shared.txt", "v1")
	writeFile(t, ws, "fg.txt", "v1")
	st := opener()(t, state, ws)

	d, err := st.BeginDetached(ctx, snapshot.CallInfo{Session: "s", Tool: "Bash", Summary: "job"})
	if err != nil {
		t.Fatal(err)
	}
	// The job runs: it changes job.txt and shared.txt, adds new.txt.
	writeFile(t, ws, "job.txt", "job")
	writeFile(t, ws, "shared.txt", "job")
	writeFile(t, ws, "new.txt", "job")

	// A foreground call is not blocked by the open detached call.
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fg, err := st.Begin(bctx, snapshot.CallInfo{Session: "s", Tool: "Bash", Summary: "fg"}, snapshot.Whole())
	if err != nil {
		t.Fatalf("foreground Begin blocked by the detached call: %v", err)
	}
	writeFile(t, ws, "fg.txt", "fg")
	writeFile(t, ws, "shared.txt", "fg")
	fe, err := fg.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := changedPaths(fe); !slices.Equal(got, []string{"fg.txt", "shared.txt"}) {
		t.Fatalf("foreground changes = %v", got)
	}

	// The job changes shared.txt again after the foreground call: that
	// later change is the job's.
	writeFile(t, ws, "shared.txt", "job-late")

	de, err := d.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if de.ID <= fe.ID {
		t.Errorf("detached entry %s should sort after the foreground entry %s", de.ID, fe.ID)
	}
	if !de.Detached || de.Interrupted || de.Began.IsZero() {
		t.Errorf("entry flags: detached %v interrupted %v began %v", de.Detached, de.Interrupted, de.Began)
	}
	if got := changedPaths(de); !slices.Equal(got, []string{"job.txt", "new.txt", "shared.txt"}) {
		t.Errorf("detached changes = %v, want job.txt new.txt shared.txt", got)
	}
	if !slices.Equal(de.Overlapped, []string{"shared.txt"}) {
		t.Errorf("overlapped = %v, want [shared.txt]", de.Overlapped)
	}
	if _, err := d.Finish(ctx); err == nil {
		t.Error("second Finish succeeded")
	}
	got, err := st.Get(ctx, de.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Detached || !slices.Equal(got.Overlapped, de.Overlapped) || !slices.Equal(changedPaths(got), changedPaths(de)) {
		t.Errorf("stored entry differs: %+v", got)
	}

	if _, err := st.Undo(ctx, de.ID, false, snapshot.CallInfo{Tool: "undo"}); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"job.txt": "v1", "shared.txt": "fg", "fg.txt": "fg"} {
		if got := readFile(t, ws, rel); got != want {
			t.Errorf("after undo %s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt survived the undo: %v", err)
	}
}

// An aborted detached call journals nothing and leaves no pending record.
// A finished one keeps its reserved ID when nothing was journaled since.
func TestDetachedAbort(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	st := opener()(t, state, ws)
	d, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	es, err := st.List(ctx, 0)
	if err != nil || len(es) != 0 {
		t.Fatalf("entries after abort: %v %v", es, err)
	}
	if des, _ := os.ReadDir(filepath.Join(st.Dir(), "pending")); len(des) != 0 {
		t.Errorf("pending left: %v", des)
	}
	// With nothing journaled meanwhile the entry keeps the reserved ID.
	d, err = st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "x", "x")
	e, err := d.Finish(ctx)
	if err != nil || e.ID != d.ID() || len(e.Changes) != 1 {
		t.Fatalf("finish: %+v %v (reserved %s)", e, err, d.ID())
	}
}

// GC while a detached call is open keeps the pre-images its undo needs,
// even after another call moved the manifest on.
func TestDetachedSurvivesGC(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, ws, "job.txt", "original content of job.txt")
	st := opener()(t, state, ws)
	d, err := st.BeginDetached(ctx, snapshot.CallInfo{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "job.txt", "job")
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "other.txt", "x")
	if _, err := c.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GC(ctx, snapshot.GCPolicy{KeepCalls: 1}); err != nil {
		t.Fatal(err)
	}
	de, err := d.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Undo(ctx, de.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, ws, "job.txt"); got != "original content of job.txt" {
		t.Errorf("job.txt after undo = %q", got)
	}
}

// TestDetachedCrashChild is the child of TestDetachedCrash: it begins a
// detached call, lets its "job" change files, and waits to be killed.
func TestDetachedCrashChild(t *testing.T) {
	ws, state := os.Getenv("SNAPSHOT_DETACHED_WS"), os.Getenv("SNAPSHOT_DETACHED_STATE")
	if ws == "" {
		return // not the child
	}
	ctx := context.Background()
	st, err := snapshot.Open(ctx, state, ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.BeginDetached(ctx, snapshot.CallInfo{Session: "s", Tool: "Bash", Summary: "job"}); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "job.txt"), []byte("job"), 0o644))
	must(t, os.Remove(filepath.Join(ws, "gone.txt")))
	os.Stdout.WriteString("ready\n")
	select {}
}

// A process that dies while its detached call is open: the next open
// finishes the call as interrupted; a live one is left alone meanwhile.
func TestDetachedCrash(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	writeFile(t, ws, "gone.txt", "keep me")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDetachedCrashChild$")
	cmd.Env = append(os.Environ(), "SNAPSHOT_DETACHED_WS="+ws, "SNAPSHOT_DETACHED_STATE="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.Contains(line, "ready") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}

	// While the child lives its call is open: others proceed, nothing is
	// recovered.
	st := opener()(t, state, ws)
	c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File("fg.txt"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "fg.txt", "fg")
	if _, err := c.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	es, _ := st.List(ctx, 0)
	if len(es) != 1 {
		t.Fatalf("entries while the job's process lives: %d, want 1", len(es))
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	st2 := opener()(t, state, ws) // recovery runs here
	es, err = st2.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("entries after recovery: %d, want 2", len(es))
	}
	de := es[0]
	if !de.Detached || !de.Interrupted {
		t.Errorf("recovered entry: detached %v interrupted %v", de.Detached, de.Interrupted)
	}
	if got := changedPaths(de); !slices.Equal(got, []string{"gone.txt", "job.txt"}) {
		t.Errorf("recovered changes = %v", got)
	}
	if des, _ := os.ReadDir(filepath.Join(st2.Dir(), "pending")); len(des) != 0 {
		t.Errorf("pending left after recovery: %v", des)
	}
	if _, err := st2.Undo(ctx, de.ID, false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, ws, "gone.txt"); got != "keep me" {
		t.Errorf("gone.txt after undo = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(ws, "job.txt")); !os.IsNotExist(err) {
		t.Errorf("job.txt survived the undo")
	}
	if got := readFile(t, ws, "fg.txt"); got != "fg" {
		t.Errorf("fg.txt = %q", got)
	}
}
