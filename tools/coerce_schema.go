package tools

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// CoerceBySchema fixes the same model slips Decode fixes for Go structs
// ("10" → 10, "true" → true, a JSON array or object sent as a string) in
// a schema-described value (tools from MCP servers and discovery), and
// returns the value. Anything it cannot fix is left for validation.
func CoerceBySchema(s *jsonschema.Schema, v any) any {
	if s == nil {
		return v
	}
	typ := s.Type
	if typ == "" && len(s.Types) == 1 {
		typ = s.Types[0]
	}
	switch typ {
	case "boolean":
		if x, ok := v.(string); ok {
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				return true
			case "false":
				return false
			}
		}
	case "integer":
		if x, ok := v.(string); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return n
			}
		}
		if f, ok := v.(float64); ok && f == math.Trunc(f) {
			return f
		}
	case "number":
		if x, ok := v.(string); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f
			}
		}
	case "string":
		switch x := v.(type) {
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			return strconv.FormatBool(x)
		}
	case "array":
		if x, ok := v.(string); ok {
			var arr []any
			if strings.HasPrefix(strings.TrimSpace(x), "[") && json.Unmarshal([]byte(x), &arr) == nil {
				v = arr
			}
		}
		if arr, ok := v.([]any); ok && s.Items != nil {
			for i := range arr {
				arr[i] = CoerceBySchema(s.Items, arr[i])
			}
		}
	case "object":
		if x, ok := v.(string); ok {
			var obj map[string]any
			if strings.HasPrefix(strings.TrimSpace(x), "{") && json.Unmarshal([]byte(x), &obj) == nil {
				v = obj
			}
		}
		if obj, ok := v.(map[string]any); ok {
			for k, e := range obj {
				if ps := s.Properties[k]; ps != nil {
					obj[k] = CoerceBySchema(ps, e)
				}
			}
		}
	}
	return v
}
