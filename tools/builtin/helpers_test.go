package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/permission"
	"github.com/agentbox/agentbox/tools/workspace"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// scriptedSandbox returns a fixed result and records the request.
type scriptedSandbox struct {
	res tools.ExecResult
	req tools.ExecRequest
}

func (s *scriptedSandbox) Exec(ctx context.Context, req tools.ExecRequest) (tools.ExecResult, error) {
	s.req = req
	return s.res, nil
}

func (s *scriptedSandbox) WriteFile(ctx context.Context, req tools.WriteRequest) error {
	return errors.New("scriptedSandbox: no writes")
}

// fakeJobs is an in-memory Jobs.
type fakeJobs struct {
	mu     sync.Mutex
	n      int
	output map[string][]string // queued output chunks per job
	done   map[string]bool
}

func (j *fakeJobs) Start(ctx context.Context, req tools.ExecRequest) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.n++
	id := fmt.Sprintf("job-%d", j.n)
	if j.output == nil {
		j.output, j.done = map[string][]string{}, map[string]bool{}
	}
	j.output[id] = nil
	return id, nil
}

func (j *fakeJobs) emit(id, s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.output[id] = append(j.output[id], s)
}

func (j *fakeJobs) Read(ctx context.Context, id string) (tools.JobStatus, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := strings.Join(j.output[id], "")
	j.output[id] = nil
	return tools.JobStatus{ID: id, Running: !j.done[id], Stdout: out}, nil
}

// AttachSnapshot implements tools.Jobs: these jobs journal nothing.
func (j *fakeJobs) AttachSnapshot(string, tools.SnapshotCall) bool { return false }

func (j *fakeJobs) Kill(ctx context.Context, id string) (tools.JobStatus, error) {
	st, _ := j.Read(ctx, id)
	j.mu.Lock()
	j.done[id] = true
	j.mu.Unlock()
	st.Running, st.ExitCode = false, 137
	return st, nil
}

// newEnv returns an Env over a fresh temporary workspace.
func newEnv(t testing.TB) *tools.Env {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	// The shared host-process double (its writes are init's own code).
	fake := sandboxtest.NewFake(ws)
	t.Cleanup(func() { fake.Close(context.Background()) })
	return &tools.Env{
		CallID:    "test",
		Workspace: ws,
		Root:      root,
		Session:   tools.NewSession("s", ws),
		Sandbox:   workspace.SandboxFor(fake),
		Limits:    tools.Limits{MaxOutputBytes: 30000, DefaultTimeout: time.Minute, MaxTimeout: 10 * time.Minute},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:       time.Now,
	}
}

// writeFiles creates files (path → content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs a tool directly (no pipeline) and turns a returned error into
// a failed Result, as the pipeline does.
func run(t testing.TB, tool tools.Tool, env *tools.Env, input string) tools.Result {
	t.Helper()
	p := tool.NewParams()
	if err := tools.Decode([]byte(input), p); err != nil {
		t.Fatalf("decode %s: %v", input, err)
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			te := tools.AsToolError(err)
			return tools.Result{Content: te.Message, Err: te}
		}
	}
	r, err := tool.Run(context.Background(), env, p)
	if err != nil {
		te := tools.AsToolError(err)
		if te.Kind == tools.ErrInternal {
			t.Logf("internal error: %v", err)
		}
		r.Err = te
		if r.Content == "" {
			r.Content = te.Message
		}
	}
	return r
}

// pipelineHarness runs calls through the real pipeline with the built-in
// tools, in bypass mode so that no approval is needed.
type pipelineHarness struct {
	env  *tools.Env
	p    *tools.Pipeline
	sess *tools.Session
}

func newPipeline(t testing.TB) *pipelineHarness {
	t.Helper()
	env := newEnv(t)
	reg := tools.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	p := tools.NewPipeline(reg, tools.Options{
		Workspace: env.Workspace, Root: env.Root, Home: "/nonexistent-home",
		Mode:     permission.ModeBypass,
		Classify: func(ctx context.Context, cmd string) tools.Verdict { return tools.Verdict{Class: tools.ClassDangerous} },
		Sandbox:  env.Sandbox,
	})
	return &pipelineHarness{env: env, p: p, sess: tools.NewSession("s", env.Workspace)}
}

func (h *pipelineHarness) call(tool string, input any) tools.Response {
	var raw json.RawMessage
	switch v := input.(type) {
	case string:
		raw = json.RawMessage(v)
	default:
		raw, _ = json.Marshal(v)
	}
	return h.p.Run(context.Background(), tools.Request{Session: h.sess, Tool: tool, Input: raw})
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s (run go test -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", name, file, got, want)
	}
}

// errKind is r's error kind, or "" when it succeeded.
func errKind(r tools.Result) tools.ErrorKind {
	if r.Err == nil {
		return ""
	}
	return r.Err.Kind
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
