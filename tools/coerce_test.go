package tools

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestCoercionAgrees runs the same slips through Decode (a Go struct)
// and coerceBySchema (the struct's JSON Schema): both must fix the same
// ones the same way, and leave the same ones alone.
func TestCoercionAgrees(t *testing.T) {
	type params struct {
		B    bool              `json:"b,omitempty"`
		I    int               `json:"i,omitempty"`
		F    float64           `json:"f,omitempty"`
		S    string            `json:"s,omitempty"`
		L    []string          `json:"l,omitempty"`
		N    []int             `json:"n,omitempty"`
		O    map[string]string `json:"o,omitempty"`
		Deep []map[string]int  `json:"deep,omitempty"`
	}
	schema, err := jsonschema.For[params](nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, in string
		want     string // the fixed input as JSON; "" when it cannot be fixed
	}{
		{"bool true", `{"b":"true"}`, `{"b":true}`},
		{"bool False spaced", `{"b":" False "}`, `{"b":false}`},
		{"bool yes", `{"b":"yes"}`, `{"b":true}`},
		{"bool no", `{"b":"NO"}`, `{"b":false}`},
		{"bool number 1", `{"b":1}`, `{"b":true}`},
		{"bool string 0", `{"b":"0"}`, `{"b":false}`},
		{"bool empty string", `{"b":""}`, ``},
		{"bool 2", `{"b":2}`, ``},
		{"bool maybe", `{"b":"maybe"}`, ``},
		{"int string", `{"i":"10"}`, `{"i":10}`},
		{"int spaced", `{"i":" 7 "}`, `{"i":7}`},
		{"int whole float string", `{"i":"10.0"}`, `{"i":10}`},
		{"int fraction string", `{"i":"1.5"}`, ``},
		{"int word", `{"i":"ten"}`, ``},
		{"float string", `{"f":"0.5"}`, `{"f":0.5}`},
		{"float NaN", `{"f":"NaN"}`, ``},
		{"string from number", `{"s":42}`, `{"s":"42"}`},
		{"string from bool", `{"s":true}`, `{"s":"true"}`},
		{"list embedded", `{"l":"[\"a\",\"b\"]"}`, `{"l":["a","b"]}`},
		{"list lone string", `{"l":"a"}`, `{"l":["a"]}`},
		{"ints embedded", `{"n":"[1, \"2\"]"}`, `{"n":[1,2]}`},
		{"ints lone string", `{"n":"1"}`, ``},
		{"object embedded", `{"o":"{\"k\":\"v\"}"}`, `{"o":{"k":"v"}}`},
		{"object embedded trailing", `{"o":"{\"k\":\"v\"} x"}`, ``},
		{"nested", `{"deep":[{"x":"3"}]}`, `{"deep":[{"x":3}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p params
			derr := Decode([]byte(tt.in), &p)

			var m map[string]any
			if err := json.Unmarshal([]byte(tt.in), &m); err != nil {
				t.Fatal(err)
			}
			coerceBySchema(schema, m)
			resolved, err := schema.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			verr := resolved.Validate(m)

			if tt.want == "" {
				if derr == nil {
					t.Errorf("Decode fixed %s into %+v", tt.in, p)
				}
				if verr == nil {
					t.Errorf("coerceBySchema fixed %s into %v", tt.in, m)
				}
				return
			}
			if derr != nil {
				t.Fatalf("Decode(%s): %v", tt.in, derr)
			}
			if verr != nil {
				t.Fatalf("coerceBySchema(%s) = %v: %v", tt.in, m, verr)
			}
			var want params
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, want) {
				t.Errorf("Decode(%s) = %+v, want %+v", tt.in, p, want)
			}
			var fromSchema params
			b, _ := json.Marshal(m)
			if err := json.Unmarshal(b, &fromSchema); err != nil || !reflect.DeepEqual(fromSchema, want) {
				t.Errorf("coerceBySchema(%s) = %s, want %s (%v)", tt.in, b, tt.want, err)
			}
		})
	}
}
