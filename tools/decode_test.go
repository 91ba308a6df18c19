package tools

import (
	"errors"
	"strings"
	"testing"
)

type decodeInner struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

type decodeParams struct {
	FilePath  string        `json:"file_path"`
	Limit     int           `json:"limit,omitempty"`
	Ratio     float64       `json:"ratio,omitempty"`
	Flag      bool          `json:"-i,omitempty"`
	Small     uint8         `json:"small,omitempty"`
	Tags      []string      `json:"tags,omitempty"`
	Edits     []decodeInner `json:"edits,omitempty"`
	Ptr       *int          `json:"ptr,omitempty"`
	Nested    *decodeInner  `json:"nested,omitempty"`
	Something string        `json:"something,omitempty"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		check   func(*decodeParams) bool
		errKind ErrorKind
		errHas  string
	}{
		{name: "plain", in: `{"file_path":"/a","limit":10}`, check: func(p *decodeParams) bool { return p.FilePath == "/a" && p.Limit == 10 }},
		{name: "string int", in: `{"file_path":"/a","limit":"10"}`, check: func(p *decodeParams) bool { return p.Limit == 10 }},
		{name: "float int", in: `{"file_path":"/a","limit":10.0}`, check: func(p *decodeParams) bool { return p.Limit == 10 }},
		{name: "string int spaces", in: `{"file_path":"/a","limit":" 7 "}`, check: func(p *decodeParams) bool { return p.Limit == 7 }},
		{name: "string bool", in: `{"file_path":"/a","-i":"true"}`, check: func(p *decodeParams) bool { return p.Flag }},
		{name: "string bool False", in: `{"file_path":"/a","-i":"False"}`, check: func(p *decodeParams) bool { return !p.Flag }},
		{name: "number bool", in: `{"file_path":"/a","-i":1}`, check: func(p *decodeParams) bool { return p.Flag }},
		{name: "number to string", in: `{"file_path":"/a","something":42}`, check: func(p *decodeParams) bool { return p.Something == "42" }},
		{name: "string float", in: `{"file_path":"/a","ratio":"0.5"}`, check: func(p *decodeParams) bool { return p.Ratio == 0.5 }},
		{name: "embedded array", in: `{"file_path":"/a","edits":"[{\"old_string\":\"a\",\"new_string\":\"b\"}]"}`, check: func(p *decodeParams) bool { return len(p.Edits) == 1 && p.Edits[0].NewString == "b" }},
		{name: "embedded object", in: `{"file_path":"/a","nested":"{\"old_string\":\"a\",\"new_string\":\"b\"}"}`, check: func(p *decodeParams) bool { return p.Nested != nil && p.Nested.OldString == "a" }},
		{name: "lone string to list", in: `{"file_path":"/a","tags":"x"}`, check: func(p *decodeParams) bool { return len(p.Tags) == 1 && p.Tags[0] == "x" }},
		{name: "nested coercion", in: `{"file_path":"/a","edits":[{"old_string":"a","new_string":"b","replace_all":"true"}]}`, check: func(p *decodeParams) bool { return p.Edits[0].ReplaceAll }},
		{name: "null is absent", in: `{"file_path":"/a","limit":null}`, check: func(p *decodeParams) bool { return p.Limit == 0 }},
		{name: "pointer", in: `{"file_path":"/a","ptr":"3"}`, check: func(p *decodeParams) bool { return p.Ptr != nil && *p.Ptr == 3 }},
		{name: "empty input is {}", in: ``, errKind: ErrValidation, errHas: `missing required field "file_path"`},
		{name: "unknown field", in: `{"file_path":"/a","bogus":1}`, errKind: ErrValidation, errHas: `unknown field "bogus"`},
		{name: "unknown field suggestion", in: `{"filePath":"/a"}`, errKind: ErrValidation, errHas: `did you mean "file_path"`},
		{name: "unknown nested field", in: `{"file_path":"/a","edits":[{"old_string":"a","new_string":"b","x":1}]}`, errKind: ErrValidation, errHas: `unknown field "edits[0].x"`},
		{name: "missing nested required", in: `{"file_path":"/a","edits":[{"old_string":"a"}]}`, errKind: ErrValidation, errHas: `"edits[0].new_string"`},
		{name: "wrong type", in: `{"file_path":"/a","limit":"ten"}`, errKind: ErrValidation, errHas: `field "limit": expected an integer, got string "ten"`},
		{name: "fraction for int", in: `{"file_path":"/a","limit":1.5}`, errKind: ErrValidation, errHas: `expected an integer`},
		{name: "overflow", in: `{"file_path":"/a","small":300}`, errKind: ErrValidation, errHas: `out of range`},
		{name: "negative unsigned", in: `{"file_path":"/a","small":-1}`, errKind: ErrValidation, errHas: `out of range`},
		{name: "object for string", in: `{"file_path":{"a":1}}`, errKind: ErrValidation, errHas: `expected a string, got an object`},
		{name: "array for bool", in: `{"file_path":"/a","-i":[]}`, errKind: ErrValidation, errHas: `expected a boolean`},
		{name: "malformed", in: `{"file_path":`, errKind: ErrValidation, errHas: `malformed JSON`},
		{name: "not object", in: `[1,2]`, errKind: ErrValidation, errHas: `must be a JSON object, not an array`},
		{name: "trailing", in: `{"file_path":"/a"} {"x":1}`, errKind: ErrValidation, errHas: `more than one JSON value`},
		{name: "trailing garbage", in: `{"file_path":"/a"} x`, errKind: ErrValidation, errHas: `malformed`},
		{name: "duplicate keys last wins", in: `{"file_path":"/a","file_path":"/b"}`, check: func(p *decodeParams) bool { return p.FilePath == "/b" }},
		{name: "nul in string kept for validate", in: `{"file_path":"/a\u0000b"}`, check: func(p *decodeParams) bool { return strings.Contains(p.FilePath, "\x00") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p decodeParams
			err := Decode([]byte(tt.in), &p)
			if tt.errKind != "" {
				var te *ToolError
				if !errors.As(err, &te) || te.Kind != tt.errKind || !strings.Contains(te.Message, tt.errHas) {
					t.Fatalf("Decode(%s) err = %v, want %s containing %q", tt.in, err, tt.errKind, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.in, err)
			}
			if !tt.check(&p) {
				t.Fatalf("Decode(%s) = %+v", tt.in, p)
			}
		})
	}
}

func TestDecodeHuge(t *testing.T) {
	big := strings.Repeat("x", 10<<20)
	var p decodeParams
	if err := Decode([]byte(`{"file_path":"/a","something":"`+big+`"}`), &p); err != nil || len(p.Something) != len(big) {
		t.Fatalf("10 MB string: %v (len %d)", err, len(p.Something))
	}
}

func TestDecodeMap(t *testing.T) {
	var m map[string]any
	if err := Decode([]byte(`{"a":1}`), &m); err != nil || m["a"] == nil {
		t.Fatalf("map decode: %v %v", err, m)
	}
	if err := Decode([]byte(`"x"`), &m); err == nil {
		t.Fatal("non-object accepted")
	}
}
