package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gateSnap is a Snapshotter whose calls are Staged: it records what it
// was asked and hands out a gate that fails with err.
type gateSnap struct {
	mu     sync.Mutex
	staged []bool
	err    error
	opened int // gate calls
}

func (g *gateSnap) Begin(ctx context.Context, info SnapshotInfo, scope Scope) (SnapshotCall, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.staged = append(g.staged, info.Staged)
	return gateSnapCall{g, info.Staged}, nil
}

type gateSnapCall struct {
	g      *gateSnap
	staged bool
}

func (c gateSnapCall) Finish(ctx context.Context) (JournalEntry, error) { return JournalEntry{}, nil }
func (c gateSnapCall) Abort(ctx context.Context) error                  { return nil }
func (c gateSnapCall) Gate() func(context.Context) error {
	if !c.staged {
		return nil
	}
	return func(context.Context) error {
		c.g.mu.Lock()
		defer c.g.mu.Unlock()
		c.g.opened++
		return c.g.err
	}
}

// gateSandbox honours WriteRequest.Gate as a runner must (nothing
// written unless it passes) and records the order of things.
type gateSandbox struct {
	mu     sync.Mutex
	events []string
	snap   *gateSnap
}

func (s *gateSandbox) note(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *gateSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	s.snap.mu.Lock()
	opened := s.snap.opened
	s.snap.mu.Unlock()
	if opened == 0 {
		s.note("exec before the gate")
	} else {
		s.note("exec")
	}
	return ExecResult{}, nil
}

func (s *gateSandbox) WriteFile(ctx context.Context, req WriteRequest) error {
	if req.Gate == nil {
		s.note("write")
		return nil
	}
	s.note("staged")
	if err := req.Gate(); err != nil {
		s.note("withdrawn")
		return errors.New("withdrawn by the executor")
	}
	s.note("committed")
	return nil
}

type putParams struct {
	FilePath string `json:"file_path" agentbox:"path"`
	Exec     bool   `json:"exec,omitempty"`
}

// TestStagedSnapshotGate: only a tool marked WritesOnlyFiles gets a
// Staged snapshot; its writes carry the gate to the sandbox, a command it
// runs waits for the gate first, and a gate that fails turns into an
// error that says nothing was changed.
func TestStagedSnapshotGate(t *testing.T) {
	put := func(ctx context.Context, env *Env, p *putParams) (Result, error) {
		if p.Exec {
			if _, err := env.Sandbox.Exec(ctx, ExecRequest{Command: "true"}); err != nil {
				return Result{}, err
			}
		}
		if err := env.WriteFile(ctx, p.FilePath, []byte("x"), 0o644); err != nil {
			return Result{}, err
		}
		return Result{Content: "ok"}, nil
	}
	tests := []struct {
		name       string
		tool       string
		exec       bool
		gateErr    error
		wantStaged bool
		wantEvents string
		wantErr    string
	}{
		{"marked", "Put", false, nil, true, "staged committed", ""},
		{"marked, gate fails", "Put", false, errors.New("fsync: EIO"), true, "staged withdrawn", "could not make this call's snapshot durable"},
		{"marked, runs a command", "Put", true, nil, true, "exec staged committed", ""},
		{"marked, runs a command, gate fails", "Put", true, errors.New("fsync: EIO"), true, "", "could not make this call's snapshot durable"},
		{"not marked", "PutPlain", false, nil, false, "write", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			root, err := os.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			reg := NewRegistry()
			for _, tl := range []Tool{
				New("Put", put, WithKind(KindEdit), WritesOnlyFiles()),
				New("PutPlain", put, WithKind(KindEdit)),
			} {
				if err := reg.Register(SourceBuiltin, tl); err != nil {
					t.Fatal(err)
				}
			}
			snap := &gateSnap{err: tc.gateErr}
			sb := &gateSandbox{snap: snap}
			p := NewPipeline(reg, Options{Workspace: ws, Root: root, Home: "/home/u", Classify: fakeClassify, Snapshots: snap, Sandbox: sb, Mode: "acceptEdits"})
			in, _ := json.Marshal(putParams{FilePath: filepath.Join(ws, "f"), Exec: tc.exec})
			r := p.Run(context.Background(), Request{Session: NewSession("s", ws), Tool: tc.tool, Input: in})
			if len(snap.staged) != 1 || snap.staged[0] != tc.wantStaged {
				t.Fatalf("snapshot begun Staged %v, want [%v]", snap.staged, tc.wantStaged)
			}
			if got := strings.Join(sb.events, " "); got != tc.wantEvents {
				t.Fatalf("sandbox saw %q, want %q", got, tc.wantEvents)
			}
			if tc.wantErr == "" {
				if r.Err != nil {
					t.Fatalf("error %v", r.Err)
				}
				return
			}
			if r.Err == nil || r.Err.Kind != ErrInternal || !strings.Contains(r.Err.Message, tc.wantErr) {
				t.Fatalf("error %+v, want %q", r.Err, tc.wantErr)
			}
		})
	}
}

// commitThenFail is a sandbox whose write passes its gate, is made, and
// then fails anyway (the container was killed before it answered).
type commitThenFail struct{ made int }

func (s *commitThenFail) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	return ExecResult{}, nil
}

func (s *commitThenFail) WriteFile(ctx context.Context, req WriteRequest) error {
	if err := req.Gate(); err != nil {
		return err
	}
	s.made++
	return Errorf(ErrTimeout, "writing %s was cancelled", req.Path)
}

// TestGatedWriteErrorNotMisreported: a write whose gate opened keeps its
// own error, even when the call's context is done by then: it is never
// reported as "nothing was changed". The gate picks at random between
// open and the done context, as a select on both would.
func TestGatedWriteErrorNotMisreported(t *testing.T) {
	durable := make(chan struct{})
	close(durable)
	gate := func(ctx context.Context) error {
		select {
		case <-durable:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	sb := &commitThenFail{}
	g := gatedSandbox{sb, gate}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 {
		made := sb.made
		err := g.WriteFile(ctx, WriteRequest{Path: "/ws/f"})
		if err == nil {
			t.Fatalf("try %d: no error", i)
		}
		if sb.made > made && strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("try %d: a made write reported as %v", i, err)
		}
	}
}
