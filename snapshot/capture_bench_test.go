package snapshot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkCaptureCall measures a whole-workspace call that appends to
// one file of a generated tree (SNAPSHOT_BENCH_FILES files, default
// 20000), with the fanotify watcher and with full scans. `agentbox bench
// snapshot` prints the same comparison on the Go tree and on 200k files.
func BenchmarkCaptureCall(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_FILES")); err == nil {
		n = v
	}
	for _, mode := range []string{CaptureAuto, CaptureScan} {
		b.Run(mode, func(b *testing.B) {
			if mode == CaptureAuto && os.Geteuid() != 0 {
				b.Skip("the watcher needs root")
			}
			ws := b.TempDir()
			for i := 0; i < n; i++ {
				d := filepath.Join(ws, fmt.Sprintf("d%03d", i/1000))
				if i%1000 == 0 {
					must(b, os.MkdirAll(d, 0o755))
				}
				must(b, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%06d", i)), []byte(strconv.Itoa(i%97)), 0o644))
			}
			ctx := context.Background()
			st, err := Open(ctx, b.TempDir(), ws, WithChangeCapture(mode), WithCaptureCheck(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			if mode == CaptureAuto && st.CaptureStats().Mode != "watch" {
				b.Fatalf("no watcher: %s", st.CaptureStats().Reason)
			}
			if _, err := st.Checkpoint(ctx, "first", CallInfo{}); err != nil {
				b.Fatal(err)
			}
			target := filepath.Join(ws, "d000", "f000000")
			scanned := st.CaptureStats().ScanTime
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := st.Begin(ctx, CallInfo{Tool: "Bash"}, Whole())
				if err != nil {
					b.Fatal(err)
				}
				f, _ := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("x")
				f.Close()
				if _, err := c.Finish(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((st.CaptureStats().ScanTime-scanned).Microseconds())/1000/float64(b.N), "scan-ms/op")
			if cs := st.CaptureStats(); mode == CaptureAuto {
				b.Logf("%+v", cs)
			}
		})
	}
}

// BenchmarkIndexClone is the fixed part of an incremental scan: a copy of
// the manifest map.
func BenchmarkIndexClone(b *testing.B) {
	ix := newIndex()
	for i := 0; i < 200000; i++ {
		ix.entries[fmt.Sprintf("d%03d/f%06d", i/1000, i)] = &ientry{}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.clone()
	}
}

// TestWatcherCostDuringBuild measures what the watcher costs while a
// build runs elsewhere on the same disk: the events it reads and the CPU
// this process uses meanwhile (nothing else runs in it). It runs only
// with SNAPSHOT_MEASURE_BUILD set to a Go package directory to build:
//
//	SNAPSHOT_MEASURE_BUILD=$PWD/cmd/agentbox go test -run TestWatcherCostDuringBuild -v ./snapshot
func TestWatcherCostDuringBuild(t *testing.T) {
	pkg := os.Getenv("SNAPSHOT_MEASURE_BUILD")
	if pkg == "" {
		t.Skip("set SNAPSHOT_MEASURE_BUILD to a package directory")
	}
	st, ws, _ := newWatchedStore(t)
	must(t, os.WriteFile(filepath.Join(ws, "a"), []byte("a"), 0o644))
	if _, err := st.scan(context.Background(), newIndex()); err != nil {
		t.Fatal(err)
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	cache := t.TempDir()
	cmd := exec.Command("go", "build", "-a", "-o", filepath.Join(t.TempDir(), "out"), ".")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "GOCACHE="+cache)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wall := time.Since(start)
	st.cap.w.take()
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	cs := st.CaptureStats()
	var bu unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &bu)
	t.Logf("build %v wall, %v CPU; watcher: %d events (%d in the workspace, %d handles opened), %v CPU (%.1f µs/event), last full: %q",
		wall.Round(time.Millisecond), (time.Duration(bu.Utime.Nano() + bu.Stime.Nano())).Round(time.Millisecond),
		cs.Events, cs.Inside, cs.Resolves, cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(max(cs.Events, 1)), cs.LastFull)
}
