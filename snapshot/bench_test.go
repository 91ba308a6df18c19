package snapshot_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

// goSrcCopy copies $(go env GOROOT)/src into a temp dir once per benchmark.
func goSrcCopy(b *testing.B) string {
	b.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(b.TempDir(), "src")
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
		b.Fatalf("copy: %v %s", err, out)
	}
	return dir
}

// BenchmarkCheckpointNoChange measures a checkpoint of an unchanged Go
// source tree (the stat-cache path). `agentbox bench snapshot` compares
// the same operations with git.
func BenchmarkCheckpointNoChange(b *testing.B) {
	ws := goSrcCopy(b)
	ctx := context.Background()
	st, err := snapshot.Open(ctx, filepath.Join(filepath.Dir(ws), "state"), ws)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Checkpoint(ctx, "first", snapshot.CallInfo{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Checkpoint(ctx, "again", snapshot.CallInfo{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallOneChange measures a whole-workspace call that changes one
// file: scan before, change, scan after, journal.
func BenchmarkCallOneChange(b *testing.B) {
	b.Run("no-limits", func(b *testing.B) { benchCallOneChange(b) })
	// The old behaviour: the store lock held from Begin to Finish, no
	// shell lock, no pre-scan manifest kept aside.
	b.Run("serial", func(b *testing.B) { benchCallOneChange(b, snapshot.WithSerialCalls(true)) })
	// The disk limits on: statfs per call, the running size updated per
	// call (no walk of the store).
	b.Run("limits", func(b *testing.B) {
		benchCallOneChange(b, snapshot.WithAutoGC(snapshot.GCPolicy{MaxBytes: 4 << 30}),
			snapshot.WithMaxCallBytes(1<<30), snapshot.WithMinFreeBytes(1<<30))
	})
}

func benchCallOneChange(b *testing.B, opts ...snapshot.Option) {
	ws := goSrcCopy(b)
	ctx := context.Background()
	st, err := snapshot.Open(ctx, filepath.Join(filepath.Dir(ws), "state"), ws, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Checkpoint(ctx, "first", snapshot.CallInfo{}); err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(ws, "fmt", "print.go")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
		if err != nil {
			b.Fatal(err)
		}
		f, _ := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(strings.Repeat("x", i%7+1) + "\n")
		f.Close()
		if _, err := c.Finish(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileCall measures the snapshot's share of a Write: a
// file-scoped call (pre-image, pending record, the change, post-image
// blob, journal entry) on a small workspace, the file's content new each
// time. Its floor is the fsyncs the crash promises need (see doc.go).
func BenchmarkFileCall(b *testing.B) {
	ws := b.TempDir()
	ctx := context.Background()
	st, err := snapshot.Open(ctx, filepath.Join(b.TempDir(), "state"), ws)
	if err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(ws, "file.txt")
	body := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100)
	if err := os.WriteFile(target, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(target))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(target, []byte(strconv.Itoa(i)+body), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Finish(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileCallBigTree is BenchmarkFileCall on a copy of the Go source
// tree (11.5k files) that has a manifest (a whole-workspace call ran
// before), as in a session where Bash and Write calls mix. "delta" is the
// store as it is (the call appends its paths to the manifest's delta);
// "full-save" rewrites the whole manifest on every call, as before the
// delta existed.
func BenchmarkFileCallBigTree(b *testing.B) {
	b.Run("delta", func(b *testing.B) { benchFileCallBigTree(b) })
	b.Run("full-save", func(b *testing.B) { benchFileCallBigTree(b, snapshot.WithFullIndexSaves()) })
}

func benchFileCallBigTree(b *testing.B, opts ...snapshot.Option) {
	ws := goSrcCopy(b)
	ctx := context.Background()
	st, err := snapshot.Open(ctx, filepath.Join(filepath.Dir(ws), "state"), ws, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Checkpoint(ctx, "first", snapshot.CallInfo{}); err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(ws, "fmt", "print.go")
	body, err := os.ReadFile(target)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write"}, snapshot.File(target))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(target, append([]byte("// "+strconv.Itoa(i)+"\n"), body...), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Finish(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
