package classifier

import (
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// BenchmarkClassifyCorpus classifies every corpus line per iteration on
// one goroutine and reports classifications per second per core, the time
// per command, and the ratio to parsing alone (the peer measured in the
// same run).
func BenchmarkClassifyCorpus(b *testing.B) {
	lines := readCorpus(b)
	cmds := make([]string, len(lines))
	for i, l := range lines {
		cmds[i] = l.Cmd
	}
	parse := parseOnlyNsPerCmd(cmds)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		for _, c := range cmds {
			Classify(c)
		}
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	n := float64(b.N * len(cmds))
	perCmd := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(1e9/perCmd, "cmds/s")
	b.ReportMetric(perCmd/1000, "µs/cmd")
	if cpu > 0 {
		// Per core: commands per second of CPU time actually used, which
		// stays meaningful when other jobs share the cores.
		b.ReportMetric(n/cpu.Seconds(), "cmds/cpu-s")
	}
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()*1e9/n/parse, "x-parse-only")
	} else {
		b.ReportMetric(perCmd/parse, "x-parse-only")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkParseOnly is the peer: parsing the corpus with mvdan/sh alone.
func BenchmarkParseOnly(b *testing.B) {
	lines := readCorpus(b)
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			p.Parse(strings.NewReader(l.Cmd), "")
		}
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	n := float64(b.N * len(lines))
	perCmd := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(1e9/perCmd, "cmds/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu.Seconds(), "cmds/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
}

// parseOnlyNsPerCmd measures the peer, in CPU time when available (wall
// time otherwise), so that the ratio survives a shared machine.
func parseOnlyNsPerCmd(cmds []string) float64 {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for time.Since(start) < 300*time.Millisecond {
		for _, c := range cmds {
			p.Parse(strings.NewReader(c), "")
			n++
		}
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		return float64(cpu.Nanoseconds()) / float64(n)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
