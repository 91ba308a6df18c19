package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentbox/agentbox/tools"
)

type GreetParams struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty" minimum:"1" maximum:"3"`
}

// A tool is a params struct and a function; the schema is generated and
// the pipeline does decoding (with coercion), validation and the rest.
func ExampleNew() {
	greet := tools.New("Greet", func(ctx context.Context, env *tools.Env, p *GreetParams) (tools.Result, error) {
		out := ""
		for i := 0; i < max(p.Times, 1); i++ {
			out += "hello " + p.Name + "\n"
		}
		return tools.Result{Content: out}, nil
	}, tools.ReadOnly(), tools.ConcurrencySafe(), tools.WithDescription(tools.Description{Summary: "Greets someone."}))

	reg := tools.NewRegistry()
	reg.Register(tools.SourceBuiltin, greet)
	p := tools.NewPipeline(reg, tools.Options{Workspace: "/tmp"})

	r := p.Run(context.Background(), tools.Request{Tool: "Greet", Input: json.RawMessage(`{"name":"ada","times":"2"}`)})
	fmt.Print(r.Content)
	r = p.Run(context.Background(), tools.Request{Tool: "Greet", Input: json.RawMessage(`{"name":"ada","loud":true}`)})
	fmt.Println(r.Err.Kind, "-", r.Err.Message)
	// Output:
	// hello ada
	// hello ada
	// validation - unknown field "loud" (valid fields: name, times) (tool Greet)
}

func ExampleDeclare() {
	greet := tools.New("Greet", func(ctx context.Context, env *tools.Env, p *GreetParams) (tools.Result, error) {
		return tools.Result{}, nil
	}, tools.WithDescription(tools.Description{Summary: "Greets someone."}))
	d, _ := tools.Declare(greet, tools.FormatAnthropic)
	b, _ := json.Marshal(d)
	fmt.Println(string(b))
	// Output:
	// {"description":"Greets someone.","input_schema":{"additionalProperties":false,"properties":{"name":{"description":"who to greet","type":"string"},"times":{"maximum":3,"minimum":1,"type":"integer"}},"required":["name"],"type":"object"},"name":"Greet"}
}
