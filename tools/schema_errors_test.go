package tools

import (
	"reflect"
	"strings"
	"testing"
)

type explainParams struct {
	Limit int         `json:"limit,omitempty" minimum:"1"`
	Ratio float64     `json:"ratio,omitempty" minimum:"-1" maximum:"1.5"`
	Mode  string      `json:"mode,omitempty" enum:"a,b"`
	Items []explainOp `json:"items,omitempty"`
}

type explainOp struct {
	N int `json:"n" maximum:"3"`
}

func TestExplainInvalid(t *testing.T) {
	s, err := schemaFor(reflect.TypeFor[explainParams]())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		inst map[string]any
		want string // "" = nothing to explain
	}{
		{map[string]any{"limit": float64(-1)}, "limit must be at least 1; got -1"},
		{map[string]any{"limit": float64(1)}, ""},
		{map[string]any{"ratio": 1.75}, "ratio must be at most 1.5; got 1.75"},
		{map[string]any{"ratio": -2.5}, "ratio must be at least -1; got -2.5"},
		{map[string]any{"mode": "c"}, `mode must be one of "a", "b"; got "c"`},
		{map[string]any{"mode": "a"}, ""},
		{map[string]any{"items": []any{map[string]any{"n": float64(1)}, map[string]any{"n": float64(7)}}}, "items[1].n must be at most 3; got 7"},
		{map[string]any{"limit": 2.5}, "limit must be a whole number; got 2.5"},
	}
	for _, tc := range cases {
		te := explainInvalid(s, tc.inst, "")
		got := ""
		if te != nil {
			got = te.Message
			if te.Kind != ErrValidation {
				t.Errorf("%v: kind %s", tc.inst, te.Kind)
			}
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.inst, got, tc.want)
		}
	}
}

func TestHumanSchemaError(t *testing.T) {
	cases := []struct{ in, want string }{
		{"validating root: validating /properties/limit: minimum: -1/1 is less than 0.000000", "limit: minimum: -1 is less than 0"},
		{"validating /properties/edits/items/0: required: missing properties: [\"old_string\"]", "edits: required: missing properties: [\"old_string\"]"},
	}
	for _, tc := range cases {
		got := humanSchemaError(tc.in)
		if got != tc.want || strings.Contains(got, "/properties/") {
			t.Errorf("humanSchemaError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
