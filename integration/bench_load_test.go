//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
)

// TestBenchLoad runs a short `agentbox bench load` and checks its JSON:
// every call made and succeeded, containers were created and none
// leaked, and the journal and the audit log read back complete. The
// serial run is either clean or skipped because this build has no
// snapshot.serial_calls key.
func TestBenchLoad(t *testing.T) {
	ensureHostImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, "--state-dir", t.TempDir(), "bench", "load", "--sessions", "2", "--calls", "10", "--slow", "1", "--json")
	cmd.Env = append(os.Environ(), "AGENTBOX_ENGINE_HOST="+cli.DaemonHost())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var rep struct {
		OK   bool `json:"ok"`
		Runs []struct {
			Name           string  `json:"name"`
			SerialCalls    bool    `json:"serial_calls"`
			Skipped        string  `json:"skipped"`
			Calls          int     `json:"calls"`
			Errors         int     `json:"errors"`
			Containers     int     `json:"containers"`
			ContainersPerS float64 `json:"containers_per_s"`
			CallsPerS      float64 `json:"calls_per_s"`
			Leaked         int     `json:"leaked"`
			Check          struct {
				Calls           int      `json:"calls"`
				Audited         int      `json:"audited"`
				Mutating        int      `json:"mutating"`
				Journaled       int      `json:"journaled"`
				AuditComplete   bool     `json:"audit_complete"`
				JournalComplete bool     `json:"journal_complete"`
				Problems        []string `json:"problems"`
			} `json:"check"`
			Tools []struct {
				Kind  string  `json:"kind"`
				N     int     `json:"n"`
				P50MS float64 `json:"p50_ms"`
			} `json:"tools"`
			FirstErrors []string `json:"first_errors"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bench load --json: %v (run: %v)\nstdout: %s\nstderr: %s", err, runErr, out.String(), errb.String())
	}
	if runErr != nil || !rep.OK {
		t.Errorf("bench load: %v, ok %t\n%s\nstderr: %s", runErr, rep.OK, out.String(), errb.String())
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs, want concurrent and serial:\n%s", len(rep.Runs), out.String())
	}
	_, serialKnown := config.KnownKeys()["snapshot.serial_calls"]
	for _, r := range rep.Runs {
		if r.Skipped != "" {
			if !r.SerialCalls || serialKnown {
				t.Errorf("%s run skipped: %s", r.Name, r.Skipped)
			}
			continue
		}
		if r.Calls != 20 || r.Errors != 0 {
			t.Errorf("%s run: %d calls, %d failed, want 20 and 0: %q", r.Name, r.Calls, r.Errors, r.FirstErrors)
		}
		if r.Containers == 0 || r.ContainersPerS <= 0 || r.CallsPerS <= 0 {
			t.Errorf("%s run: %d containers, %.1f/s, %.1f calls/s", r.Name, r.Containers, r.ContainersPerS, r.CallsPerS)
		}
		if r.Leaked != 0 {
			t.Errorf("%s run: %d containers leaked", r.Name, r.Leaked)
		}
		c := r.Check
		// Every timed call plus two warm-up calls per session.
		if c.Calls != 24 || !c.AuditComplete || c.Audited != c.Calls || !c.JournalComplete || c.Mutating == 0 || c.Journaled != c.Mutating {
			t.Errorf("%s run: check %+v", r.Name, c)
		}
		n := 0
		for _, s := range r.Tools {
			n += s.N
		}
		if n != 20 {
			t.Errorf("%s run: %d calls in the latency rows, want 20", r.Name, n)
		}
	}
}
