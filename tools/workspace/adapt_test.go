package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
)

func TestSandboxWriteError(t *testing.T) {
	req := tools.WriteRequest{Path: "/w/out/sub/x.txt", Rel: "out/sub/x.txt", Data: make([]byte, 3000)}
	we := func(kind error, path, errno string) error {
		return fmt.Errorf("wrapped: %w", &sandbox.WriteError{Kind: kind, Path: path, Errno: errno, Detail: "detail " + errno})
	}
	tests := []struct {
		name string
		err  error
		kind tools.ErrorKind
		has  []string
	}{
		{"protected", we(sandbox.ErrProtected, "out/sub/x.txt", ""), tools.ErrPermissionDenied, []string{"refused to write /w/out/sub/x.txt", "approval"}},
		{"read-only mount", we(sandbox.ErrReadOnly, "out/sub/x.txt", "EROFS"), tools.ErrPermissionDenied, []string{"protected and read-only", "/w/out/sub/x.txt"}},
		{"symlinked parent", we(sandbox.ErrSymlink, "out", "ELOOP"), tools.ErrValidation, []string{"/w/out is a symbolic link", "never writes through"}},
		{"final symlink", we(sandbox.ErrSymlink, "out/sub/x.txt", "ELOOP"), tools.ErrValidation, []string{"/w/out/sub/x.txt is a symbolic link"}},
		{"escape", we(sandbox.ErrSymlink, "out", "EXDEV"), tools.ErrValidation, []string{"/w/out resolves outside"}},
		{"fsize", we(sandbox.ErrNoSpace, "out/sub/x.txt", "EFBIG"), tools.ErrExecution, []string{"3000 bytes", "sandbox.file_size_mb"}},
		{"disk full", we(sandbox.ErrNoSpace, "out/sub/x.txt", "ENOSPC"), tools.ErrExecution, []string{"no space left"}},
		{"file as parent", we(nil, "out/sub", "ENOTDIR"), tools.ErrValidation, []string{"/w/out/sub is not a directory"}},
		{"directory", we(nil, "out/sub/x.txt", "EISDIR"), tools.ErrValidation, []string{"is a directory"}},
		{"permissions", we(nil, "out/sub", "EACCES"), tools.ErrPermissionDenied, []string{"permissions of /w/out/sub"}},
		{"other", we(nil, "out/sub/x.txt", "EIO"), tools.ErrExecution, []string{"detail EIO"}},
		{"timeout", fmt.Errorf("%w after 2m", sandbox.ErrTimeout), tools.ErrTimeout, []string{"timed out"}},
		{"unavailable", sandbox.ErrUnavailable, tools.ErrInternal, []string{"unavailable"}},
		{"invalid", fmt.Errorf("%w: bad", sandbox.ErrInvalidSpec), tools.ErrValidation, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := tools.AsToolError(sandboxWriteError(req, tc.err))
			if te == nil || te.Kind != tc.kind {
				t.Fatalf("got %v, want kind %s", te, tc.kind)
			}
			for _, h := range tc.has {
				if !strings.Contains(te.Message, h) {
					t.Errorf("message %q lacks %q", te.Message, h)
				}
			}
		})
	}
}

type limitSnap struct{ err error }

func (l limitSnap) Begin(ctx context.Context, info tools.SnapshotInfo, scope tools.Scope) (tools.SnapshotCall, error) {
	return nil, snapshotError(l.err)
}

// A snapshot refused by a store limit reaches the model as a clear
// execution error naming what the user can do; other failures stay
// internal.
func TestSnapshotLimitMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind tools.ErrorKind
		want []string
	}{
		{"too large", fmt.Errorf("wrapped: %w", &snapshot.LimitError{Err: snapshot.ErrTooLarge, Path: "big.bin", Limit: 1 << 30}),
			tools.ErrExecution, []string{"nothing was changed", "snapshot.max_call_bytes", `"big.bin"`, "agentbox checkpoint"}},
		{"no space", &snapshot.LimitError{Err: snapshot.ErrNoSpace, Free: 5, Floor: 10, Dir: "/secret/state"},
			tools.ErrExecution, []string{"nothing was changed", "agentbox snapshots gc", "snapshot.min_free_bytes"}},
		{"other", errors.New("disk broke"), tools.ErrInternal, []string{"nothing was changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			h := tools.SnapshotStage(limitSnap{tc.err}, nil)(func(ctx context.Context, c *tools.Call) tools.Result {
				ran = true
				return tools.Result{}
			})
			type params struct{}
			tool := tools.New("Mutate", func(ctx context.Context, env *tools.Env, p *params) (tools.Result, error) { return tools.Result{}, nil })
			res := h(context.Background(), &tools.Call{Tool: tool, Params: &params{}, Session: &tools.Session{}})
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
