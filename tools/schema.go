package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFor generates the JSON Schema of a params struct type with
// github.com/google/jsonschema-go and applies the constraint tags enum,
// minimum and maximum (see New). Structs disallow additional properties.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		return nil, fmt.Errorf("schema for %s: %w", t, err)
	}
	if err := applyTags(t, s); err != nil {
		return nil, fmt.Errorf("schema for %s: %w", t, err)
	}
	dropNull(s)
	return s, nil
}

// dropNull turns every type list of the form [null, T] (what jsonschema-go
// generates for pointer and slice fields) into the single type T. Such
// fields are optional and Decode treats null as absent, so nothing is
// lost, while several clients (the MCP Inspector's --strict check, older
// OpenAI and Gemini validators) warn about or reject type arrays.
func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		var rest []string
		for _, t := range s.Types {
			if t != "null" {
				rest = append(rest, t)
			}
		}
		if len(rest) == 1 {
			s.Type, s.Types = rest[0], nil
		} else {
			s.Types = rest
		}
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
	dropNull(s.AdditionalProperties)
	for _, x := range s.AnyOf {
		dropNull(x)
	}
	for _, x := range s.OneOf {
		dropNull(x)
	}
	for _, x := range s.AllOf {
		dropNull(x)
	}
}

func applyTags(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			return applyTags(t.Elem(), s.Items)
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if v, ok := f.Tag.Lookup("enum"); ok {
			for _, e := range strings.Split(v, ",") {
				ps.Enum = append(ps.Enum, e)
			}
		}
		for _, c := range []struct {
			tag string
			dst **float64
		}{{"minimum", &ps.Minimum}, {"maximum", &ps.Maximum}} {
			if v, ok := f.Tag.Lookup(c.tag); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("field %s: bad %s tag %q", f.Name, c.tag, v)
				}
				*c.dst = &n
			}
		}
		if err := applyTags(f.Type, ps); err != nil {
			return err
		}
	}
	return nil
}

// jsonName is the JSON property name of a field ("" when skipped).
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// fieldRole is what an `agentbox:"..."` tag marks.
type fieldRole struct {
	index   []int
	json    string
	path    bool
	cwd     bool // empty path defaults to the session cwd
	command bool
}

var rolesCache sync.Map // reflect.Type → []fieldRole

func rolesOf(t reflect.Type) []fieldRole {
	if v, ok := rolesCache.Load(t); ok {
		return v.([]fieldRole)
	}
	var roles []fieldRole
	if t.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(t) {
			tag, ok := f.Tag.Lookup("agentbox")
			if !ok || !f.IsExported() || f.Type.Kind() != reflect.String {
				continue
			}
			r := fieldRole{index: f.Index, json: jsonName(f)}
			for _, part := range strings.Split(tag, ",") {
				switch part {
				case "path":
					r.path = true
				case "cwd":
					r.cwd = true
				case "command":
					r.command = true
				}
			}
			roles = append(roles, r)
		}
	}
	rolesCache.Store(t, roles)
	return roles
}

func structValue(p any) (reflect.Value, bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	return v.Elem(), true
}

// pathsOf returns the non-empty values of the params' path fields
// (Backfill sets Call.Paths with it).
func pathsOf(p any) []string {
	v, ok := structValue(p)
	if !ok {
		return nil
	}
	var out []string
	for _, r := range rolesOf(v.Type()) {
		if r.path {
			if s := v.FieldByIndex(r.index).String(); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// commandOf returns the params' shell command field, if it has one
// (DecodeStage sets Call.Command with it).
func commandOf(p any) (string, bool) {
	v, ok := structValue(p)
	if !ok {
		return "", false
	}
	for _, r := range rolesOf(v.Type()) {
		if r.command {
			return v.FieldByIndex(r.index).String(), true
		}
	}
	return "", false
}

// schemaJSON is the schema as a JSON object (for declarations).
func schemaJSON(s *jsonschema.Schema) map[string]any {
	raw, err := json.Marshal(s)
	if err != nil {
		return map[string]any{"type": "object"}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return map[string]any{"type": "object"}
	}
	return m
}
