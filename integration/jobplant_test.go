//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJobPlantRevertedWhenMade (issue 19, section 3): a background job
// that creates .vscode/tasks.json (a folder-open task) and .envrc kept
// them on the host until its output was read, or until the session ended.
// Now they are gone within a second of being made, with no later call:
// both for a job that exits at once and for one that keeps running. The
// job writes a marker (not protected) right after the plant; the test
// reads the workspace only, never calling a tool until the deadline.
func TestJobPlantRevertedWhenMade(t *testing.T) {
	const plant = `mkdir -p .vscode && printf '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch /tmp/agentbox-jobplant-pwned","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json && echo 'touch /tmp/agentbox-jobplant-pwned' > .envrc && echo work > out.txt && date +%s.%N > made.marker`
	for _, tc := range []struct {
		name, tail string
	}{
		{"exits", ""},
		{"keeps running", "; sleep 60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newRT2Harness(t)
			r := h.ok(h.call("Bash", map[string]any{"command": plant + tc.tail, "run_in_background": true}))
			id, _ := r.Meta["bash_id"].(string)
			marker := filepath.Join(h.ws, "made.marker")
			if !eventually(time.Minute, 5*time.Millisecond, func() bool {
				return exists(marker) && strings.TrimSpace(h.content(marker)) != ""
			}) {
				t.Fatal("the job did not write its marker")
			}
			fi, err := os.Stat(marker)
			if err != nil {
				t.Fatal(err)
			}
			made := fi.ModTime()
			plants := []string{filepath.Join(h.ws, ".vscode", "tasks.json"), filepath.Join(h.ws, ".envrc")}
			for {
				var left []string
				for _, p := range plants {
					if exists(p) {
						left = append(left, p)
					}
				}
				if len(left) == 0 {
					t.Logf("plants gone %v after the marker was written", time.Since(made).Round(time.Millisecond))
					break
				}
				if time.Since(made) > time.Second {
					t.Fatalf("%v still exist %v after they were made (no call since)", left, time.Since(made).Round(time.Millisecond))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := h.content(filepath.Join(h.ws, "out.txt")); got != "work\n" {
				t.Fatalf("the job's ordinary work was touched: %q", got)
			}
			// The journal: the plant is never a change of the job's entry;
			// the job's end reports it as reverted (as a foreground call's
			// result does).
			var o = r
			if tc.tail == "" {
				o = h.waitJob(id)
			} else {
				o = h.ok(h.call("KillShell", map[string]any{"shell_id": id}))
			}
			jid, _ := o.Meta["journal_id"].(string)
			if jid == "" {
				t.Fatalf("no journal entry reported: %q %v", o.Content, o.Meta)
			}
			e := h.historyEntry(jid)
			var changed []string
			for _, c := range e.Changes {
				changed = append(changed, c.Path)
			}
			t.Logf("entry %s: changes %v; reported: %q reverted %v", jid, changed, o.Content, o.Meta["reverted"])
			for _, p := range []string{".vscode/tasks.json", ".envrc"} {
				if slices.Contains(changed, p) {
					t.Errorf("%s is a change of the job's entry, though it was reverted", p)
				}
				if !strings.Contains(fmt.Sprint(o.Meta["reverted"]), p) {
					t.Errorf("the job's end does not report %s as reverted: %v", p, o.Meta["reverted"])
				}
			}
			if !slices.Contains(changed, "out.txt") {
				t.Errorf("the job's ordinary change is not journaled: %v", changed)
			}
		})
	}
}
