package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// RawSpec describes a tool whose input schema comes from elsewhere (an MCP
// server, a discovery command) rather than a Go struct. Its params are a
// *map[string]any checked against Schema in the validate stage.
type RawSpec struct {
	Name        string
	Aliases     []string
	Description Description
	Kind        Kind
	Schema      *jsonschema.Schema
	// ReadOnly, ConcurrencySafe, Destructive hold for every call.
	ReadOnly, ConcurrencySafe, Destructive bool
	Run                                    func(ctx context.Context, env *Env, args map[string]any) (Result, error)
}

// NewRaw makes a [Tool] from a [RawSpec]. An empty [Kind] is [KindOther]; a
// nil schema accepts any object.
func NewRaw(s RawSpec) (Tool, error) {
	if s.Run == nil {
		return nil, fmt.Errorf("tool %s: no Run", s.Name)
	}
	if s.Kind == "" {
		s.Kind = KindOther
	}
	if s.Schema == nil {
		s.Schema = &jsonschema.Schema{Type: "object"}
	}
	if s.Schema.Type != "object" {
		return nil, fmt.Errorf("tool %s: input schema must be of type object", s.Name)
	}
	if _, err := s.Schema.Resolve(nil); err != nil {
		return nil, fmt.Errorf("tool %s: invalid input schema: %w", s.Name, err)
	}
	return &rawTool{s}, nil
}

type rawTool struct{ s RawSpec }

func (t *rawTool) Name() string               { return t.s.Name }
func (t *rawTool) Aliases() []string          { return append([]string(nil), t.s.Aliases...) }
func (t *rawTool) Description() Description   { return t.s.Description }
func (t *rawTool) Kind() Kind                 { return t.s.Kind }
func (t *rawTool) Schema() *jsonschema.Schema { return t.s.Schema.CloneSchemas() }
func (t *rawTool) NewParams() any             { m := map[string]any{}; return &m }
func (t *rawTool) ReadOnly(any) bool          { return t.s.ReadOnly }
func (t *rawTool) ConcurrencySafe(any) bool   { return t.s.ConcurrencySafe }
func (t *rawTool) Destructive(any) bool       { return t.s.Destructive }
func (t *rawTool) Run(ctx context.Context, env *Env, p any) (Result, error) {
	m, ok := p.(*map[string]any)
	if !ok || m == nil {
		return Result{}, fmt.Errorf("tool %s: params are %T", t.s.Name, p)
	}
	return t.s.Run(ctx, env, *m)
}

// Declaration is a tool declaration as discovery commands print it.
type Declaration struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	InputSchema *jsonschema.Schema `json:"input_schema"`
	ReadOnly    bool               `json:"read_only,omitempty"`
}

// Discover runs the discovery command argv in the sandbox (in the
// workspace root) and returns one tool per declaration it prints (a JSON
// array). Each tool runs `argv... run NAME` in the sandbox with its input
// as JSON on stdin; stdout is the result, a non-zero exit an execution
// error. Discovered tools are kind other: every call asks for approval
// unless a rule allows it, and is snapshotted as a whole-workspace call.
func Discover(ctx context.Context, sb Sandbox, argv []string, workspace string) ([]Tool, error) {
	if len(argv) == 0 {
		return nil, nil
	}
	if sb == nil {
		return nil, fmt.Errorf("discovery: no sandbox to run %q in", argv[0])
	}
	res, err := sb.Exec(ctx, ExecRequest{Argv: argv, Dir: workspace})
	if err != nil {
		return nil, fmt.Errorf("discovery %q: %w", argv[0], err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("discovery %q exited %d: %s", argv[0], res.ExitCode, TrimDetail(res.Stderr))
	}
	var decls []Declaration
	if err := json.Unmarshal([]byte(res.Stdout), &decls); err != nil {
		return nil, fmt.Errorf("discovery %q: output is not a JSON array of declarations: %w", argv[0], err)
	}
	var out []Tool
	for _, d := range decls {
		d := d
		cmd := append(append([]string(nil), argv...), "run", d.Name)
		t, err := NewRaw(RawSpec{
			Name:        d.Name,
			Description: Description{Summary: d.Description},
			Kind:        KindOther,
			Schema:      d.InputSchema,
			ReadOnly:    false, // a declaration's claim is not proof
			Run: func(ctx context.Context, env *Env, args map[string]any) (Result, error) {
				if env.Sandbox == nil {
					return Result{}, Errorf(ErrInternal, "no sandbox is configured to run %s", d.Name)
				}
				in, err := json.Marshal(args)
				if err != nil {
					return Result{}, Errorf(ErrValidation, "input cannot be encoded: %v", err)
				}
				r, err := env.Sandbox.Exec(ctx, ExecRequest{Argv: cmd, Dir: env.Workspace, Stdin: in})
				if err != nil {
					return Result{}, err
				}
				res := Result{Content: r.Stdout, Display: fmt.Sprintf("%s exited %d", d.Name, r.ExitCode)}
				res.SetMeta("exit_code", r.ExitCode)
				res.SetMeta("container_id", r.ContainerID)
				if r.TimedOut {
					res.Err = Errorf(ErrTimeout, "%s timed out", d.Name)
				} else if r.ExitCode != 0 {
					res.Err = Errorf(ErrExecution, "%s exited %d: %s", d.Name, r.ExitCode, TrimDetail(r.Stderr))
				}
				return res, nil
			},
		})
		if err != nil {
			return nil, fmt.Errorf("discovery %q: %w", argv[0], err)
		}
		out = append(out, t)
	}
	return out, nil
}
