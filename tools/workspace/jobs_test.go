package workspace

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

// openJobSystem opens the tools over the shared fake runner in
// bypassPermissions mode, with edits applied to the config; run fails the
// test on a call that fails.
func openJobSystem(t *testing.T, edits ...func(*config.Config)) (*Tools, *tools.Session, func(tool, in string) tools.Response) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Tools.Mode = "bypassPermissions"
	for _, edit := range edits {
		edit(cfg)
	}
	ctx := context.Background()
	sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(cfg.Workspace)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(ctx) })
	sess, _ := sys.Sessions.Load("t")
	return sys, sess, func(tool, in string) tools.Response {
		t.Helper()
		r := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: json.RawMessage(in)})
		if r.Err != nil {
			t.Fatalf("%s %s: %s: %s", tool, in, r.Err.Kind, r.Err.Message)
		}
		return r
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Lstat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newest(t *testing.T, sys *Tools) snapshot.Entry {
	t.Helper()
	st, err := snapshot.OpenConfig(context.Background(), sys.Config)
	if err != nil {
		t.Fatal(err)
	}
	es, err := st.List(context.Background(), 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("history: %v %v", es, err)
	}
	return es[0]
}

func paths(e snapshot.Entry) string {
	var ps []string
	for _, c := range e.Changes {
		ps = append(ps, c.Path)
	}
	return strings.Join(ps, ",")
}

// KillShell journals what the job changed as one entry; a foreground
// call meanwhile is not blocked and keeps its own change.
func TestBackgroundJobKillJournals(t *testing.T) {
	sys, _, run := openJobSystem(t)
	ws := sys.Config.Workspace
	r := run("Bash", `{"command":"echo made > bg.txt; exec sleep 60","run_in_background":true}`)
	id := r.Meta["bash_id"].(string)
	if r.Meta["journal"] == nil {
		t.Fatalf("no pending journal note: %v", r.Meta)
	}
	waitFile(t, filepath.Join(ws, "bg.txt"))
	w := run("Write", `{"file_path":"fg.txt","content":"fg"}`)
	k := run("KillShell", `{"shell_id":"`+id+`"}`)
	jid, _ := k.Meta["journal_id"].(string)
	if jid == "" || jid <= w.Meta["journal_id"].(string) || !strings.Contains(k.Content, "recorded as call "+jid) {
		t.Fatalf("kill: %q %v (write %v)", k.Content, k.Meta, w.Meta["journal_id"])
	}
	e := newest(t, sys)
	if e.ID != jid || !e.Detached || paths(e) != "bg.txt" {
		t.Fatalf("newest entry %+v", e)
	}
	recs, err := sys.Audit.Read()
	if err != nil || len(recs) == 0 {
		t.Fatalf("audit: %v", err)
	}
	if last := recs[len(recs)-1]; last.Tool != "KillShell" || last.JournalID != jid {
		t.Fatalf("audit record of KillShell: tool %s journal %q, want %s", last.Tool, last.JournalID, jid)
	}
	st, _ := snapshot.OpenConfig(context.Background(), sys.Config)
	if _, err := st.Undo(context.Background(), "", false, snapshot.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "bg.txt")); !os.IsNotExist(err) {
		t.Fatal("undo left bg.txt")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "fg.txt")); string(b) != "fg" {
		t.Fatalf("fg.txt = %q", b)
	}
}

// The BashOutput call that sees the job's end journals it.
func TestBackgroundJobExitJournals(t *testing.T) {
	sys, _, run := openJobSystem(t)
	id := run("Bash", `{"command":"echo done > done.txt","run_in_background":true}`).Meta["bash_id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for {
		o := run("BashOutput", `{"bash_id":"`+id+`"}`)
		if strings.Contains(o.Content, "has exited") {
			if o.Meta["journal_id"] == nil {
				t.Fatalf("exit read without journal: %v", o.Meta)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := newest(t, sys); !e.Detached || paths(e) != "done.txt" {
		t.Fatalf("newest entry %+v", e)
	}
	// Read again: nothing journaled twice.
	if o := run("BashOutput", `{"bash_id":"`+id+`"}`); o.Meta["journal_id"] != nil {
		t.Fatalf("journaled twice: %v", o.Meta)
	}
}

// Close kills running jobs and journals their changes.
func TestBackgroundJobCloseJournals(t *testing.T) {
	sys, _, run := openJobSystem(t)
	run("Bash", `{"command":"echo late > late.txt; exec sleep 60","run_in_background":true}`)
	waitFile(t, filepath.Join(sys.Config.Workspace, "late.txt"))
	if err := sys.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := newest(t, sys); !e.Detached || paths(e) != "late.txt" {
		t.Fatalf("newest entry %+v", e)
	}
}

// The snapshot store honours snapshot.compress from config.
func TestSnapshotConfigCompress(t *testing.T) {
	sys, _, run := openJobSystem(t)
	sys.Config.Snapshot.Compress = true
	ws := sys.Config.Workspace
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("compress me ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	run("Bash", `{"command":"echo x > small.txt"}`)
	compressed := 0
	filepath.WalkDir(filepath.Join(sys.Config.WorkspaceStateDir(), "snapshots", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".z") {
			compressed++
		}
		return nil
	})
	if compressed == 0 {
		t.Fatal("no compressed blob with snapshot.compress on")
	}
}
