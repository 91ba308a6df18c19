package tools

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// RunFunc is the body of a tool made by New.
type RunFunc[P any] func(ctx context.Context, env *Env, p *P) (Result, error)

// BuildOption configures a tool made by New.
type BuildOption func(*built)

// New makes a Tool from a params struct type P and a run function. The
// JSON Schema is generated from P (json tags name the fields; fields
// without omitempty are required; a `jsonschema:"..."` tag is the field's
// description; `enum:"a,b"`, `minimum:"0"`, `maximum:"10"` add constraints;
// `agentbox:"path"` marks a path the pipeline backfills and checks,
// `agentbox:"path,cwd"` one that defaults to the session's cwd when empty;
// `agentbox:"command"` marks the shell command the classifier judges).
//
// Defaults are conservative: kind other, not read-only, not
// concurrency-safe, not destructive. New panics if P is not a struct or its
// schema cannot be generated: that is a programming error found at
// startup, like regexp.MustCompile.
func New[P any](name string, run RunFunc[P], opts ...BuildOption) Tool {
	t := &built{
		name: name,
		kind: KindOther,
		run: func(ctx context.Context, env *Env, p any) (Result, error) {
			pp, ok := p.(*P)
			if !ok {
				return Result{}, fmt.Errorf("tool %s: params are %T, want *%T", name, p, *new(P))
			}
			return run(ctx, env, pp)
		},
		newParams: func() any { return new(P) },
	}
	typ := reflect.TypeFor[P]()
	if typ.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools.New(%s): params must be a struct, not %s", name, typ))
	}
	s, err := schemaFor(typ)
	if err != nil {
		panic(fmt.Sprintf("tools.New(%s): %v", name, err))
	}
	t.schema = s
	for _, o := range opts {
		o(t)
	}
	if t.scope != nil {
		return &scopedTool{t}
	}
	return t
}

// Aliases adds other names the tool answers to.
func Aliases(names ...string) BuildOption {
	return func(b *built) { b.aliases = append(b.aliases, names...) }
}

// WithKind sets the kind.
func WithKind(k Kind) BuildOption { return func(b *built) { b.kind = k } }

// WithDescription sets the model-facing description.
func WithDescription(d Description) BuildOption { return func(b *built) { b.desc = d } }

// ReadOnly marks every call of the tool read-only.
func ReadOnly() BuildOption { return func(b *built) { b.readOnly = always } }

// ConcurrencySafe marks every call safe to run in parallel with others.
func ConcurrencySafe() BuildOption { return func(b *built) { b.concurrent = always } }

// Destructive marks every call destructive (hard to undo outside agentbox).
func Destructive() BuildOption { return func(b *built) { b.destructive = always } }

// ReadOnlyWhen decides read-only per call.
func ReadOnlyWhen[P any](f func(*P) bool) BuildOption {
	return func(b *built) { b.readOnly = pred(f) }
}

// ConcurrencySafeWhen decides concurrency safety per call.
func ConcurrencySafeWhen[P any](f func(*P) bool) BuildOption {
	return func(b *built) { b.concurrent = pred(f) }
}

// DestructiveWhen decides destructiveness per call.
func DestructiveWhen[P any](f func(*P) bool) BuildOption {
	return func(b *built) { b.destructive = pred(f) }
}

// WithScope says what a call can change, for the snapshot stage (see
// Scoper for the default).
func WithScope[P any](f func(*P) Scope) BuildOption {
	return func(b *built) {
		b.scope = func(p any) Scope {
			pp, ok := p.(*P)
			if !ok {
				return Scope{Kind: ScopeWorkspace}
			}
			return f(pp)
		}
	}
}

// WritesOnlyFiles says the tool changes the workspace only with
// Env.WriteFile (it implements SandboxWriter): its snapshot may be begun
// Staged, its writes waiting for the snapshot's gate in the sandbox.
func WritesOnlyFiles() BuildOption { return func(b *built) { b.onlyFiles = true } }

// TracksReads makes the tool take part in read-before-write.
func TracksReads(t ReadTracking) BuildOption { return func(b *built) { b.tracking = t } }

func always(any) bool { return true }

func pred[P any](f func(*P) bool) func(any) bool {
	return func(p any) bool {
		pp, ok := p.(*P)
		return ok && f(pp)
	}
}

type built struct {
	name                              string
	aliases                           []string
	desc                              Description
	kind                              Kind
	schema                            *jsonschema.Schema
	newParams                         func() any
	run                               func(context.Context, *Env, any) (Result, error)
	readOnly, concurrent, destructive func(any) bool
	scope                             func(any) Scope
	tracking                          ReadTracking
	onlyFiles                         bool
}

func (b *built) Name() string               { return b.name }
func (b *built) Aliases() []string          { return append([]string(nil), b.aliases...) }
func (b *built) Description() Description   { return b.desc }
func (b *built) Kind() Kind                 { return b.kind }
func (b *built) Schema() *jsonschema.Schema { return b.schema.CloneSchemas() }
func (b *built) NewParams() any             { return b.newParams() }
func (b *built) ReadOnly(p any) bool        { return b.readOnly != nil && b.readOnly(p) }
func (b *built) ConcurrencySafe(p any) bool { return b.concurrent != nil && b.concurrent(p) }
func (b *built) Destructive(p any) bool     { return b.destructive != nil && b.destructive(p) }
func (b *built) ReadTracking() ReadTracking { return b.tracking }
func (b *built) WritesOnlyFiles() bool      { return b.onlyFiles }
func (b *built) Run(ctx context.Context, env *Env, p any) (Result, error) {
	return b.run(ctx, env, p)
}

// scopedTool is a tool made by New with WithScope, the only kind that
// implements Scoper; the others get the default (ScopeOf).
type scopedTool struct{ *built }

// Scope implements Scoper.
func (t *scopedTool) Scope(p any) Scope { return t.scope(p) }
