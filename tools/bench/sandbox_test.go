package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPeerRowSaysWhy: a peer that cannot run is a row with the reason,
// the report lists it apart, and the rows that ran keep their ratios.
func TestPeerRowSaysWhy(t *testing.T) {
	var progress bytes.Buffer
	skipped := peerRow(&progress, "bwrap", func() (SandboxRow, error) {
		return SandboxRow{}, errors.New("bwrap: Can't chdir to /tmp/ws: Permission denied")
	})
	if skipped.Name != "bwrap" || !strings.Contains(skipped.Skipped, "Permission denied") || skipped.N != 0 {
		t.Errorf("failed peer's row: %+v", skipped)
	}
	if !strings.Contains(progress.String(), "bwrap: cannot run here: bwrap: Can't chdir") {
		t.Errorf("progress does not say why: %q", progress.String())
	}
	ran := peerRow(&progress, "docker-exec", func() (SandboxRow, error) {
		return row("docker-exec", []time.Duration{40 * time.Millisecond}), nil
	})
	if ran.Skipped != "" || ran.P50MS != 40 {
		t.Errorf("peer that ran: %+v", ran)
	}
	rate, leaked := 12.5, 0
	pool := row("agentbox-pool", []time.Duration{4 * time.Millisecond})
	pool.SustainedPerS, pool.Leaked = &rate, &leaked
	var out bytes.Buffer
	if err := WriteSandboxReport(&out, []SandboxRow{pool, skipped, ran}, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docker-exec  1   40.00   40.00           10.0x", "bwrap: not run: bwrap: Can't chdir to /tmp/ws: Permission denied", "met (10.0x)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "bwrap  0") {
		t.Errorf("the skipped row is in the table:\n%s", out.String())
	}
}
