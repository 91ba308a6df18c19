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
)

// TestBenchEgress: `agentbox bench egress` downloads through a real
// sandbox's relay and proxy, on the host and on the host through a bare
// relay, and reports both rows with measured values on each side.
func TestBenchEgress(t *testing.T) {
	requireDebianTool(t, "curl", "curl")
	ensureHostImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, "--state-dir", t.TempDir(), "bench", "egress", "--n", "1", "--json")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AGENTBOX_ENGINE_HOST="+cli.DaemonHost())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench egress: %v\n%s\n%s", err, out.String(), errb.String())
	}
	var rows []struct {
		Name    string  `json:"name"`
		Host    float64 `json:"host"`
		Sandbox float64 `json:"sandbox"`
		Ratio   float64 `json:"ratio"`
		Relay   float64 `json:"relay"`
		VsRelay float64 `json:"vs_relay"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("bench egress --json: %v\n%s", err, out.String())
	}
	for _, r := range rows {
		if r.Host <= 0 || r.Sandbox <= 0 {
			t.Errorf("row %+v has no measurement", r)
		}
	}
	if rows[0].Name != "bulk-32MiB-https" || rows[0].Ratio <= 0 || rows[0].Relay <= 0 || rows[0].VsRelay <= 0 || rows[1].Name != "new-connection-p50" {
		t.Errorf("rows %+v", rows)
	}
	t.Logf("%s", out.String())
}
