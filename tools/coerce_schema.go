package tools

import (
	"github.com/google/jsonschema-go/jsonschema"
)

// coerceBySchema fixes the same model slips Decode fixes for Go structs
// (the as* rules in coerce.go: "10" → 10, "true" → true, a JSON array or
// object sent as a string, a lone string for a list of strings) in a
// schema-described value (tools from MCP servers and discovery), and
// returns the value; objects are fixed in place. Anything it cannot fix
// is left for validation.
func coerceBySchema(s *jsonschema.Schema, v any) any {
	if s == nil {
		return v
	}
	switch schemaType(s) {
	case "boolean":
		if b, ok := asBool(v); ok {
			return b
		}
	case "integer":
		if x, ok := v.(string); ok {
			if n, ok := asInt(x); ok {
				return n
			}
		}
	case "number":
		if x, ok := v.(string); ok {
			if f, ok := asFloat(x); ok {
				return f
			}
		}
	case "string":
		if x, ok := asString(v); ok {
			return x
		}
	case "array":
		return coerceArrayBySchema(s, v)
	case "object":
		return coerceObjectBySchema(s, v)
	}
	return v
}

func coerceArrayBySchema(s *jsonschema.Schema, v any) any {
	arr, ok := asArray(v, s.Items != nil && schemaType(s.Items) == "string", false)
	if !ok {
		return v
	}
	if s.Items != nil {
		for i := range arr {
			arr[i] = coerceBySchema(s.Items, arr[i])
		}
	}
	return arr
}

func coerceObjectBySchema(s *jsonschema.Schema, v any) any {
	obj, ok := asObject(v, false)
	if !ok {
		return v
	}
	for k, e := range obj {
		if ps := s.Properties[k]; ps != nil {
			obj[k] = coerceBySchema(ps, e)
		} else if s.AdditionalProperties != nil {
			obj[k] = coerceBySchema(s.AdditionalProperties, e)
		}
	}
	return obj
}

// schemaType is the one JSON type s allows besides null, or "".
func schemaType(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	typ := ""
	for _, t := range s.Types {
		switch {
		case t == "null":
		case typ != "":
			return ""
		default:
			typ = t
		}
	}
	return typ
}
