package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/snapshot"
)

type limitSnap struct{ err error }

func (l limitSnap) Begin(ctx context.Context, info SnapshotInfo, scope Scope) (SnapshotCall, error) {
	return nil, l.err
}

// A snapshot refused by a store limit reaches the model as a clear
// execution error naming what the user can do; other failures stay
// internal.
func TestSnapshotLimitMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind ErrorKind
		want []string
	}{
		{"too large", fmt.Errorf("wrapped: %w", &snapshot.LimitError{Err: snapshot.ErrTooLarge, Path: "big.bin", Limit: 1 << 30}),
			ErrExecution, []string{"nothing was changed", "snapshot.max_call_bytes", `"big.bin"`, "agentbox checkpoint"}},
		{"no space", &snapshot.LimitError{Err: snapshot.ErrNoSpace, Free: 5, Floor: 10, Dir: "/secret/state"},
			ErrExecution, []string{"nothing was changed", "agentbox snapshots gc", "snapshot.min_free_bytes"}},
		{"other", errors.New("disk broke"), ErrInternal, []string{"nothing was changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			h := SnapshotStage(limitSnap{tc.err}, nil)(func(ctx context.Context, c *Call) Result {
				ran = true
				return Result{}
			})
			type params struct{}
			tool := New("Mutate", func(ctx context.Context, env *Env, p *params) (Result, error) { return Result{}, nil })
			res := h(context.Background(), &Call{Tool: tool, Params: &params{}, Session: &Session{}})
			if ran {
				t.Fatal("the call ran without a snapshot")
			}
			if res.Err == nil || res.Err.Kind != tc.kind {
				t.Fatalf("result error %+v, want kind %s", res.Err, tc.kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Err.Message, w) {
					t.Errorf("message %q lacks %q", res.Err.Message, w)
				}
			}
			if strings.Contains(res.Err.Message, "/secret/state") {
				t.Errorf("message %q leaks the state dir", res.Err.Message)
			}
		})
	}
}
