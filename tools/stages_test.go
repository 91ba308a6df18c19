package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Stages tested alone: each wraps a handler that records what reached it.

func reached(got **Call) Handler {
	return func(ctx context.Context, c *Call) Result {
		*got = c
		return Result{Content: "ran"}
	}
}

// decoded sets what DecodeStage and Backfill carry on a call built with
// its Params already final (Command, Paths), for a stage tested alone.
func decoded(c *Call) *Call {
	c.Command, c.HasCommand = commandOf(c.Params)
	c.Paths = pathsOf(c.Params)
	return c
}

func TestPathPolicyResolve(t *testing.T) {
	pp := PathPolicy{Workspace: "/ws", Home: "/home/u", ReadOnlyDirs: []string{"/opt/docs"}}
	tests := []struct {
		in, cwd  string
		readOnly bool
		want     string
		errKind  ErrorKind
	}{
		{in: "a.txt", cwd: "/ws", want: "/ws/a.txt"},
		{in: "a.txt", cwd: "/ws/sub", want: "/ws/sub/a.txt"},
		{in: "a.txt", cwd: "", want: "/ws/a.txt"},
		{in: "./x/../y", cwd: "/ws", want: "/ws/y"},
		{in: "/ws", want: "/ws"},
		{in: "/ws/", want: "/ws"},
		{in: "/ws/../etc/passwd", errKind: ErrPermissionDenied},
		{in: "../../etc", cwd: "/ws/sub", errKind: ErrPermissionDenied},
		{in: "/wsx/a", errKind: ErrPermissionDenied},
		{in: "~/a", errKind: ErrPermissionDenied},
		{in: "~", errKind: ErrPermissionDenied},
		{in: "~bob/a", errKind: ErrValidation},
		{in: "a\x00b", cwd: "/ws", errKind: ErrValidation},
		{in: strings.Repeat("a/", 3000), cwd: "/ws", errKind: ErrValidation},
		{in: "/opt/docs/x", readOnly: true, want: "/opt/docs/x"},
		{in: "/opt/docs/x", readOnly: false, errKind: ErrPermissionDenied},
		{in: "/opt/docsx", readOnly: true, errKind: ErrPermissionDenied},
	}
	for _, tt := range tests {
		got, err := pp.Resolve(tt.in, tt.cwd, tt.readOnly)
		if tt.errKind != "" {
			if te := AsToolError(err); err == nil || te.Kind != tt.errKind {
				t.Errorf("Resolve(%q) = %q, %v; want %s", tt.in, got, err, tt.errKind)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tt.in, tt.cwd, got, err, tt.want)
		}
	}
	if got, err := (PathPolicy{Workspace: "/ws", Home: "/ws/home"}).Resolve("~/a", "", false); err != nil || got != "/ws/home/a" {
		t.Errorf("~ inside the workspace: %q %v", got, err)
	}
}

func TestRecoverStage(t *testing.T) {
	h := Chain(func(ctx context.Context, c *Call) Result { panic("boom") }, Recover(discardLogger()))
	r := h(context.Background(), &Call{Name: "X"})
	if r.Err == nil || r.Err.Kind != ErrInternal || strings.Contains(r.Content, "boom") {
		t.Fatalf("recover: %+v", r)
	}
}

// TestCallCarriesFacts: DecodeStage sets the call's command and Backfill
// its paths as the later stages must see them (resolved against the
// session's cwd), once.
func TestCallCarriesFacts(t *testing.T) {
	ts := testTools(t)
	echo, read, write, bash := ts[0], ts[1], ts[2], ts[3]
	reg := NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(SourceBuiltin, tl); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		tool       Tool
		input      string
		command    string
		hasCommand bool
		paths      []string
	}{
		{bash, `{"command":"ls -l"}`, "ls -l", true, nil},
		{write, `{"file_path":"a/b.txt","content":"x"}`, "", false, []string{"/ws/sub/a/b.txt"}},
		{read, `{"file_path":"/ws/c.txt"}`, "", false, []string{"/ws/c.txt"}},
		{echo, `{"text":"hi"}`, "", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Name(), func(t *testing.T) {
			var got *Call
			h := Chain(reached(&got), Lookup(reg), DecodeStage(1<<20), Backfill(PathPolicy{Workspace: "/ws"}))
			c := &Call{Name: tt.tool.Name(), Session: NewSession("s", "/ws/sub"), Input: json.RawMessage(tt.input)}
			if r := h(context.Background(), c); r.Err != nil {
				t.Fatalf("%s: %s", r.Err.Kind, r.Err.Message)
			}
			if got.Command != tt.command || got.HasCommand != tt.hasCommand || !slices.Equal(got.Paths, tt.paths) {
				t.Errorf("command %q (%v) paths %q, want %q (%v) %q", got.Command, got.HasCommand, got.Paths, tt.command, tt.hasCommand, tt.paths)
			}
		})
	}
}

func TestClassifyStage(t *testing.T) {
	tools := testTools(t)
	bash, echo := tools[3], tools[0]
	var got *Call
	for _, tt := range []struct {
		classify ClassifyFunc
		tool     Tool
		params   any
		want     string
	}{
		{fakeClassify, bash, &bashParams{Command: "ls"}, ClassReadOnly},
		{nil, bash, &bashParams{Command: "ls"}, ClassDangerous},
		{func(context.Context, string) Verdict { return Verdict{Class: "weird"} }, bash, &bashParams{Command: "x"}, ClassDangerous},
		{fakeClassify, echo, &echoParams{Text: "ls"}, ""},
	} {
		got = nil
		Chain(reached(&got), ClassifyStage(tt.classify))(context.Background(), decoded(&Call{Tool: tt.tool, Params: tt.params}))
		class := ""
		if got.Verdict != nil {
			class = got.Verdict.Class
		}
		if class != tt.want {
			t.Errorf("%s: class %q, want %q", tt.tool.Name(), class, tt.want)
		}
	}
}

func TestTruncateStage(t *testing.T) {
	h := Chain(func(ctx context.Context, c *Call) Result { return Result{Content: strings.Repeat("x", 5000)} }, Truncate(1000))
	r := h(context.Background(), &Call{})
	if len(r.Content) > 1000 || r.Meta["truncated_bytes"].(int) < 4000 {
		t.Fatalf("truncate: %d %v", len(r.Content), r.Meta)
	}
}
