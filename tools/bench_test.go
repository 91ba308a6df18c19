package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

// BenchmarkBatchReads runs a batch of 10 Reads of 2000-line files through
// the whole pipeline, once as a batch (concurrency-safe calls in
// parallel) and once call by call, in the same run, and reports the
// speed-up of the batch as "x_serial/batch".
func BenchmarkBatchReads(b *testing.B) {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3) + "\n"
	var reqs []tools.Request
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(strings.Repeat(line, 4000)), 0o644); err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, tools.Request{Tool: "Read", Input: json.RawMessage(`{"file_path":"` + name + `"}`)})
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		b.Fatal(err)
	}
	p := tools.NewPipeline(reg, tools.Options{Workspace: ws, Root: root})
	ctx := context.Background()
	var batch, serial time.Duration
	for i := 0; i < b.N; i++ {
		// A fresh session each round, so no read is answered with the
		// "unchanged since your last read" stub.
		s1, s2 := tools.NewSession("b", ws), tools.NewSession("s", ws)
		for j := range reqs {
			reqs[j].Session = s1
		}
		t0 := time.Now()
		for _, r := range p.RunBatch(ctx, reqs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		batch += time.Since(t0)
		t0 = time.Now()
		for _, r := range reqs {
			r.Session = s2
			if res := p.Run(ctx, r); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
		serial += time.Since(t0)
	}
	b.ReportMetric(float64(batch.Microseconds())/float64(b.N)/1000, "ms_batch/op")
	b.ReportMetric(float64(serial.Microseconds())/float64(b.N)/1000, "ms_serial/op")
	b.ReportMetric(float64(serial)/float64(batch), "x_serial/batch")
}
