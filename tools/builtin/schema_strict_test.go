package builtin_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
)

// TestDeclarationsStrict: what every format declares passes the strictest
// rules clients apply: each "type" is a single string (no ["x","null"]
// arrays, which the MCP Inspector's --strict check warns about and some
// validators reject), every object schema lists its properties, and
// every array schema has items.
func TestDeclarationsStrict(t *testing.T) {
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, f := range []tools.Format{tools.FormatMCP, tools.FormatOpenAI, tools.FormatAnthropic, tools.FormatGemini} {
		for _, tool := range reg.List() {
			d, err := tools.Declare(tool, f)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(d)
			var v any
			json.Unmarshal(b, &v)
			walkSchema(t, string(f)+"/"+tool.Name(), v)
		}
	}
}

func walkSchema(t *testing.T, at string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if ty, ok := x["type"]; ok {
			s, isString := ty.(string)
			if !isString {
				t.Errorf("%s: type %v is not a single type name", at, ty)
			}
			switch s {
			case "array", "ARRAY":
				if _, ok := x["items"]; !ok {
					t.Errorf("%s: array without items", at)
				}
			case "null", "NULL":
				t.Errorf("%s: type null", at)
			}
		}
		for k, c := range x {
			if props, ok := c.(map[string]any); ok && k == "properties" {
				// A map of names to schemas: a property may be named "type".
				for name, ps := range props {
					walkSchema(t, at+"/properties/"+name, ps)
				}
				continue
			}
			walkSchema(t, at+"/"+k, c)
		}
	case []any:
		for _, c := range x {
			walkSchema(t, at+"/[]", c)
		}
	}
}
