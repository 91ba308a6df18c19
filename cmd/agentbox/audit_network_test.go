package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/workspace"
)

func TestAuditNetworkFilter(t *testing.T) {
	ws, _ := snapshotFixture(t)
	cfg, err := config.Load(config.LoadOptions{Getenv: func(k string) string {
		if k == "AGENTBOX_WORKSPACE" {
			return ws
		}
		return os.Getenv(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(workspace.AuditPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UTC()
	for _, r := range []audit.Record{
		{Time: now, Session: "s", CallID: "c1", Tool: "Bash", Decision: "allow", DecidedBy: "mode"},
		{Time: now, Session: "s", CallID: "c1", Tool: audit.NetworkTool, Decision: "allow", DecidedBy: `network.allow "a.example"`,
			Network: &audit.Connection{Kind: "connect", Host: "a.example", Port: 443, Addr: "192.0.2.1:443", BytesOut: 3 << 20, BytesIn: 7, LargeUpload: true}},
		{Time: now, Session: "s", CallID: "c2", Tool: audit.NetworkTool, Decision: "deny", DecidedBy: "default", Reason: "not-allowed",
			Network: &audit.Connection{Kind: "http", Method: "GET", Host: "b.example", Port: 80}},
	} {
		if err := log.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	out, _, err := runCLI(t, "--workspace", ws, "audit", "--network")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "CONNECT a.example:443 via 192.0.2.1:443") || !strings.Contains(lines[1], "LARGE UPLOAD") ||
		!strings.Contains(lines[2], "GET b.example:80") || !strings.Contains(lines[2], "not-allowed") {
		t.Fatalf("audit --network:\n%s", out)
	}
	out, _, err = runCLI(t, "--workspace", ws, "audit", "--call", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 3 || strings.Contains(out, "b.example") {
		t.Fatalf("audit --call c1:\n%s", out)
	}
}
