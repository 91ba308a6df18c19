package builtin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/permission"
)

// goSrc is the Go source tree the search benchmarks run over.
func goSrc(b *testing.B) (string, *os.Root) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	src, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(out)), "src"))
	if err != nil {
		b.Fatalf("Go source tree: %v", err)
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	return src, root
}

func benchPipeline(b *testing.B, src string, root *os.Root) *tools.Pipeline {
	reg := tools.NewRegistry()
	if err := Register(reg); err != nil {
		b.Fatal(err)
	}
	return tools.NewPipeline(reg, tools.Options{Workspace: src, Root: root, Mode: permission.ModeBypass, Limits: tools.Limits{MaxOutputBytes: 1 << 30}})
}

var readBatchFiles = []string{"fmt/print.go", "fmt/scan.go", "os/file.go", "os/exec/exec.go", "net/http/server.go",
	"strings/strings.go", "bytes/bytes.go", "sort/sort.go", "io/io.go", "bufio/bufio.go"}

func readBatch(src string) []tools.Request {
	sess := tools.NewSession("bench", src)
	reqs := make([]tools.Request, len(readBatchFiles))
	for i, f := range readBatchFiles {
		raw, _ := json.Marshal(map[string]any{"file_path": filepath.Join(src, f)})
		reqs[i] = tools.Request{Session: sess, Tool: "Read", Input: raw}
	}
	return reqs
}

// BenchmarkReadBatch10 compares a batch of 10 Reads run in parallel by the
// pipeline with the same Reads run one after another.
func BenchmarkReadBatch10(b *testing.B) {
	src, root := goSrc(b)
	p := benchPipeline(b, src, root)
	ctx := context.Background()
	b.Run("parallel", func(b *testing.B) {
		for b.Loop() {
			for _, r := range p.RunBatch(ctx, readBatch(src)) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			for _, req := range readBatch(src) {
				if r := p.Run(ctx, req); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	})
}

// BenchmarkGlobGoSrc times Glob **/*.go over the Go source tree.
func BenchmarkGlobGoSrc(b *testing.B) {
	src, root := goSrc(b)
	p := benchPipeline(b, src, root)
	raw, _ := json.Marshal(map[string]any{"pattern": "**/*.go", "path": src})
	for b.Loop() {
		if r := p.Run(context.Background(), tools.Request{Tool: "Glob", Input: raw}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkGrepGoSrc times Grep (files_with_matches) over the Go source tree.
func BenchmarkGrepGoSrc(b *testing.B) {
	src, root := goSrc(b)
	p := benchPipeline(b, src, root)
	raw, _ := json.Marshal(map[string]any{"pattern": "func main", "path": src})
	for b.Loop() {
		if r := p.Run(context.Background(), tools.Request{Tool: "Grep", Input: raw}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
