//go:build integration

package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools/bench"
)

// TestMCPLoad: 8 concurrent MCP sessions × 100 mixed calls (Read, Grep,
// Glob, Write, Edit, read-only, mutating and slow Bash) against one
// `agentbox mcp --http`, driven by package bench's load driver (the one
// `agentbox bench load` runs). Every call must succeed with a result that
// is its own (each carries a unique token and none of another session's;
// each Write's file holds what it wrote), no container may leak, and the
// journal and the audit log must hold every call with its session, each
// mutating call's change in its own entry and in no other. Prints
// throughput and p50/p95 per kind of call.
func TestMCPLoad(t *testing.T) {
	const sessions, calls = 8, 100
	ensureHostImage(t)
	t.Setenv("AGENTBOX_ENGINE_HOST", cli.DaemonHost()) // for the server under load
	cfg := config.Default()
	cfg.Engine.Host = cli.DaemonHost()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	rep, err := bench.Load(ctx, os.Stderr, &cfg, agentbox, bench.LoadOptions{
		Sessions: sessions, Calls: calls, Slow: 3 * time.Second, Concurrent: true})
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	if err := bench.WriteLoadReport(&report, rep); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + report.String())
	if len(rep.Runs) != 1 || rep.Runs[0].Skipped != "" {
		t.Fatalf("want one concurrent run:\n%s", report.String())
	}
	r := rep.Runs[0]
	if !rep.OK || r.Calls != sessions*calls || r.Errors != 0 {
		t.Errorf("%d calls, %d failed, want %d and 0 (ok %t): %q", r.Calls, r.Errors, sessions*calls, rep.OK, r.FirstErrors)
	}
	if r.Leaked != 0 || r.Containers == 0 {
		t.Errorf("%d containers created, %d leaked", r.Containers, r.Leaked)
	}
	c := r.Check
	// Every timed call plus two warm-up calls per session.
	if c.Calls != sessions*(calls+2) || !c.AuditComplete || !c.JournalComplete || c.Mutating == 0 || c.Misattributed != 0 {
		t.Errorf("journal and audit check: %+v", c)
	}
	kinds := map[string]int{}
	for _, s := range r.Tools {
		kinds[s.Kind] = s.N
	}
	for _, k := range []string{"Read", "Grep", "Glob", "Write", "Edit", "Bash read-only", "Bash mutating", "Bash slow"} {
		if kinds[k] == 0 {
			t.Errorf("no %s call in the load: %v", k, kinds)
		}
	}
}
