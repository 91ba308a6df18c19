package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools/audit"
)

// BenchmarkPipelineOverhead measures what the pipeline adds to a trivial
// read-only call, against calling the tool directly in the same run:
// "x_direct" is pipeline time / direct time, with and without the
// durable (fsynced) audit log.
func BenchmarkPipelineOverhead(b *testing.B) {
	echo := testTools(&testing.T{})[0]
	ws := b.TempDir()
	in := json.RawMessage(`{"text":"hi","count":"2"}`)
	reg := NewRegistry()
	reg.Register(SourceBuiltin, echo)
	log, _ := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"))
	plain := NewPipeline(reg, Options{Workspace: ws})
	audited := NewPipeline(reg, Options{Workspace: ws, Audit: log})
	sess := NewSession("b", ws)
	ctx := context.Background()
	var direct, pipe, aud time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p := echo.NewParams()
		if err := Decode(in, p); err != nil {
			b.Fatal(err)
		}
		if _, err := echo.Run(ctx, &Env{Workspace: ws, Session: sess}, p); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(t0)
		t0 = time.Now()
		if r := plain.Run(ctx, Request{Session: sess, Tool: "Echo", Input: in}); r.Err != nil {
			b.Fatal(r.Err)
		}
		pipe += time.Since(t0)
		t0 = time.Now()
		if r := audited.Run(ctx, Request{Session: sess, Tool: "Echo", Input: in}); r.Err != nil {
			b.Fatal(r.Err)
		}
		aud += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(direct.Nanoseconds())/n/1000, "us_direct/op")
	b.ReportMetric(float64(pipe.Nanoseconds())/n/1000, "us_pipeline/op")
	b.ReportMetric(float64(aud.Nanoseconds())/n/1000, "us_pipeline+audit/op")
	b.ReportMetric(float64(pipe)/float64(direct), "x_direct")
}
