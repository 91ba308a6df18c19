package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools/permission"
	"github.com/google/jsonschema-go/jsonschema"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update to accept):\n%s", name, got)
	}
}

func TestRegistry(t *testing.T) {
	reg := NewRegistry()
	ts := testTools(t)
	raw, err := NewRaw(RawSpec{Name: "mcp_thing", Run: func(ctx context.Context, env *Env, a map[string]any) (Result, error) { return Result{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	disc, _ := NewRaw(RawSpec{Name: "found", Run: func(ctx context.Context, env *Env, a map[string]any) (Result, error) { return Result{}, nil }})
	// Registration order is mixed on purpose: List orders by source.
	must(t, reg.Register(SourceMCP, raw))
	must(t, reg.Register(SourceBuiltin, ts[0]))
	must(t, reg.Register(SourceDiscovered, disc))
	for _, x := range ts[1:] {
		must(t, reg.Register(SourceBuiltin, x))
	}
	var names []string
	for _, x := range reg.List() {
		names = append(names, x.Name())
	}
	if got := strings.Join(names, ","); got != "Echo,Read,Write,Bash,Grep,found,mcp_thing" {
		t.Fatalf("order %s", got)
	}
	if err := reg.Register(SourceMCP, ts[0]); !errors.Is(err, ErrNameConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	clash := New("Other", func(ctx context.Context, env *Env, p *echoParams) (Result, error) { return Result{}, nil }, Aliases("Say"))
	if err := reg.Register(SourceBuiltin, clash); !errors.Is(err, ErrNameConflict) {
		t.Fatalf("alias clash: %v", err)
	}
	bad := New("bad name", func(ctx context.Context, env *Env, p *echoParams) (Result, error) { return Result{}, nil })
	if err := reg.Register(SourceBuiltin, bad); err == nil {
		t.Fatal("bad name accepted")
	}
	if x, ok := reg.Lookup("Say"); !ok || x.Name() != "Echo" {
		t.Fatal("alias lookup")
	}
	if got := len(reg.ByKind(KindRead)); got != 1 {
		t.Fatalf("ByKind(read) = %d", got)
	}
	var plan []string
	for _, x := range reg.Filter(PlanMode) {
		plan = append(plan, x.Name())
	}
	if got := strings.Join(plan, ","); got != "Echo,Read,Bash,Grep" {
		t.Fatalf("plan mode tools %s", got)
	}
	if !reg.Unregister("Echo") || reg.Unregister("Echo") {
		t.Fatal("unregister")
	}
	if _, ok := reg.Lookup("Say"); ok {
		t.Fatal("alias survived unregister")
	}
	if err := reg.Register(SourceBuiltin, clash); err != nil {
		t.Fatalf("alias not freed: %v", err)
	}
}

func TestDeclarationsGolden(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			decls, err := DeclareAll(testTools(t), f)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(decls, "", "  ")
			golden(t, "declarations-"+string(f)+".json", append(b, '\n'))
		})
	}
	if _, err := Declare(testTools(t)[0], "xml"); err == nil {
		t.Fatal("unknown format accepted")
	}
}

func TestGeminiSubset(t *testing.T) {
	decls, _ := DeclareAll(testTools(t), FormatGemini)
	b, _ := json.Marshal(decls)
	for _, bad := range []string{"additionalProperties", "$schema", `"type":"object"`, `"type":["`} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("gemini declaration contains %s", bad)
		}
	}
}

func TestSchemaGenerated(t *testing.T) {
	s, err := schemaFor(reflectTypeOf[echoParams]())
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Required) != 1 || s.Required[0] != "text" {
		t.Fatalf("schema %+v", s)
	}
	if c := s.Properties["count"]; c.Minimum == nil || *c.Maximum != 5 {
		t.Fatalf("count %+v", c)
	}
	if m := s.Properties["mode"]; len(m.Enum) != 2 {
		t.Fatalf("mode %+v", m)
	}
	if s.Properties["text"].Description != "text to echo" {
		t.Fatal("description tag lost")
	}
	if _, err := s.Resolve(nil); err != nil {
		t.Fatal(err)
	}
}

func TestRawToolValidation(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}}, Required: []string{"n"}}
	var got map[string]any
	raw, err := NewRaw(RawSpec{Name: "R", Schema: schema, ReadOnly: true, Run: func(ctx context.Context, env *Env, a map[string]any) (Result, error) {
		got = a
		return Result{Content: "ok"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register(SourceMCP, raw)
	p := NewPipeline(reg, Options{Workspace: t.TempDir()})
	if r := p.Run(context.Background(), Request{Tool: "R", Input: json.RawMessage(`{"n":"x"}`)}); r.Err == nil || r.Err.Kind != ErrValidation {
		t.Fatalf("schema not enforced: %+v", r)
	}
	if r := p.Run(context.Background(), Request{Tool: "R", Input: json.RawMessage(`{"n":"3"}`)}); r.Err != nil || got["n"] != int64(3) {
		t.Fatalf("coerced call: %+v %v", r, got)
	}
	if r := p.Run(context.Background(), Request{Tool: "R", Input: json.RawMessage(`{"n":3}`)}); r.Err != nil || got["n"] == nil {
		t.Fatalf("valid call: %+v %v", r, got)
	}
	if _, err := NewRaw(RawSpec{Name: "x", Schema: &jsonschema.Schema{Type: "string"}, Run: raw.(*rawTool).s.Run}); err == nil {
		t.Fatal("non-object schema accepted")
	}
}

type scriptSandbox struct {
	out  string
	code int
	reqs []ExecRequest
}

func (s *scriptSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	s.reqs = append(s.reqs, req)
	return ExecResult{ExitCode: s.code, Stdout: s.out, ContainerID: "c1"}, nil
}

func TestDiscover(t *testing.T) {
	sb := &scriptSandbox{out: `[{"name":"lint","description":"Runs the linter","input_schema":{"type":"object","properties":{"fix":{"type":"boolean"}}}}]`}
	found, err := Discover(context.Background(), sb, []string{"/w/tools.sh"}, "/w")
	if err != nil || len(found) != 1 || found[0].Name() != "lint" || found[0].ReadOnly(nil) {
		t.Fatalf("discover: %v %v", found, err)
	}
	sb.out = "done"
	res, err := found[0].Run(context.Background(), &Env{Sandbox: sb, Workspace: "/w"}, &map[string]any{"fix": true})
	if err != nil || res.Content != "done" {
		t.Fatalf("run: %+v %v", res, err)
	}
	last := sb.reqs[len(sb.reqs)-1]
	if strings.Join(last.Argv, " ") != "/w/tools.sh run lint" || string(last.Stdin) != `{"fix":true}` {
		t.Fatalf("request %+v", last)
	}
	sb.code = 2
	if _, err := Discover(context.Background(), sb, []string{"x"}, "/w"); err == nil {
		t.Fatal("failing discovery accepted")
	}
	sb.code, sb.out = 0, "not json"
	if _, err := Discover(context.Background(), sb, []string{"x"}, "/w"); err == nil {
		t.Fatal("bad output accepted")
	}
}

func TestDescriptionRender(t *testing.T) {
	golden(t, "description.txt", []byte(testTools(t)[0].Description().Render()+"\n"))
}

func TestNotDenied(t *testing.T) {
	reg := NewRegistry()
	for _, x := range testTools(t) {
		reg.Register(SourceBuiltin, x)
	}
	deny, _ := permission.ParseAll([]string{"Edit", "Bash(rm:*)", "Say"}, "user")
	var names []string
	for _, x := range reg.Filter(NotDenied(permission.Rules{Deny: deny})) {
		names = append(names, x.Name())
	}
	if got := strings.Join(names, ","); got != "Read,Bash,Grep" {
		t.Fatalf("not denied: %s", got)
	}
}
