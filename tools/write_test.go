package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func (s *scriptSandbox) WriteFile(ctx context.Context, req WriteRequest) error {
	return errors.New("scriptSandbox: no writes")
}

// recordingSandbox records write requests.
type recordingSandbox struct {
	writes []WriteRequest
	err    error
}

func (s *recordingSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	return ExecResult{}, errors.New("no exec")
}

func (s *recordingSandbox) WriteFile(ctx context.Context, req WriteRequest) error {
	s.writes = append(s.writes, req)
	return s.err
}

func TestEnvWriteFile(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		mode     fs.FileMode
		approved []string
		readOnly bool
		noSbx    bool
		wantKind ErrorKind // "" = handed over
		want     WriteRequest
	}{
		{name: "plain", path: "/w/src/a.go", mode: 0o644, want: WriteRequest{Path: "/w/src/a.go", Rel: "src/a.go", Mode: 0o644}},
		{name: "unclean path", path: "/w/src/../b.go", mode: 0o600, want: WriteRequest{Path: "/w/b.go", Rel: "b.go", Mode: 0o600}},
		{name: "type bits dropped", path: "/w/x", mode: fs.ModeSetuid | 0o755, want: WriteRequest{Path: "/w/x", Rel: "x", Mode: 0o755}},
		{name: "approved protected", path: "/w/.vscode/settings.json", mode: 0o644, approved: []string{".vscode/settings.json"},
			want: WriteRequest{Path: "/w/.vscode/settings.json", Rel: ".vscode/settings.json", Mode: 0o644, ApprovedProtected: true}},
		{name: "another path approved", path: "/w/.envrc", mode: 0o644, approved: []string{".vscode/settings.json"},
			want: WriteRequest{Path: "/w/.envrc", Rel: ".envrc", Mode: 0o644}},
		{name: "outside", path: "/etc/passwd", wantKind: ErrValidation},
		{name: "relative", path: "a.go", wantKind: ErrValidation},
		{name: "read-only call", path: "/w/a.go", readOnly: true, wantKind: ErrInternal},
		{name: "no sandbox", path: "/w/a.go", noSbx: true, wantKind: ErrInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := &recordingSandbox{}
			env := &Env{Workspace: "/w", Sandbox: sb, ProtectedApproved: tc.approved, ReadOnly: tc.readOnly}
			if tc.noSbx {
				env.Sandbox = nil
			}
			err := env.WriteFile(context.Background(), tc.path, []byte("data"), tc.mode)
			if tc.wantKind != "" {
				if te := AsToolError(err); te == nil || te.Kind != tc.wantKind || len(sb.writes) != 0 {
					t.Fatalf("err %v, writes %d; want %s and nothing handed over", err, len(sb.writes), tc.wantKind)
				}
				return
			}
			if err != nil || len(sb.writes) != 1 {
				t.Fatalf("err %v, writes %d", err, len(sb.writes))
			}
			got := sb.writes[0]
			if string(got.Data) != "data" {
				t.Fatalf("data %q", got.Data)
			}
			got.Data = nil
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("request %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadOnlySandboxRefusesWrites: the wrapper of a read-only call does
// not pass writes on to the sandbox it wraps.
func TestReadOnlySandboxRefusesWrites(t *testing.T) {
	sb := &recordingSandbox{}
	err := readOnlySandbox{sb}.WriteFile(context.Background(), WriteRequest{Path: "/w/a", Rel: "a"})
	if err == nil || len(sb.writes) != 0 {
		t.Fatalf("read-only wrapper wrote: %v", err)
	}
}
