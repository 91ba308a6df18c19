package tools

import (
	"fmt"
	"strings"
)

// Format is a declaration format.
type Format string

const (
	FormatMCP       Format = "mcp"
	FormatOpenAI    Format = "openai"
	FormatAnthropic Format = "anthropic"
	FormatGemini    Format = "gemini"
)

// Formats lists the supported declaration formats.
var Formats = []Format{FormatMCP, FormatOpenAI, FormatAnthropic, FormatGemini}

// Declare returns the declaration of t in format f, ready to be encoded as
// JSON:
//   - mcp: {name, description, inputSchema, annotations}
//   - openai: {type: "function", function: {name, description, parameters}}
//   - anthropic: {name, description, input_schema}
//   - gemini: {name, description, parameters} with the schema reduced to
//     Gemini's OpenAPI subset (upper-case types, nullable instead of type
//     lists, no additionalProperties or $schema).
func Declare(t Tool, f Format) (map[string]any, error) {
	schema := schemaJSON(t.Schema())
	desc := t.Description().Render()
	switch f {
	case FormatMCP:
		p := t.NewParams()
		ro := t.ReadOnly(p)
		ann := map[string]any{
			"title":          t.Name(),
			"readOnlyHint":   ro,
			"openWorldHint":  t.Kind() == KindFetch,
			"idempotentHint": ro,
		}
		if !ro {
			ann["destructiveHint"] = t.Destructive(p)
		}
		return map[string]any{"name": t.Name(), "description": desc, "inputSchema": schema, "annotations": ann}, nil
	case FormatOpenAI:
		return map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name(), "description": desc, "parameters": schema,
		}}, nil
	case FormatAnthropic:
		return map[string]any{"name": t.Name(), "description": desc, "input_schema": schema}, nil
	case FormatGemini:
		return map[string]any{"name": t.Name(), "description": desc, "parameters": geminiSchema(schema)}, nil
	}
	return nil, fmt.Errorf("unknown declaration format %q (want one of mcp, openai, anthropic, gemini)", f)
}

// DeclareAll declares every tool in order.
func DeclareAll(ts []Tool, f Format) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		d, err := Declare(t, f)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// geminiKeys are the schema keywords Gemini's function declarations accept.
var geminiKeys = map[string]bool{
	"type": true, "format": true, "description": true, "nullable": true, "enum": true,
	"properties": true, "required": true, "items": true, "minimum": true, "maximum": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true, "pattern": true,
	"title": true, "propertyOrdering": true, "anyOf": true, "default": true, "example": true,
}

func geminiSchema(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		if !geminiKeys[k] {
			continue
		}
		switch k {
		case "type":
			switch tv := v.(type) {
			case string:
				out["type"] = strings.ToUpper(tv)
			case []any:
				for _, x := range tv {
					if xs, _ := x.(string); xs == "null" {
						out["nullable"] = true
					} else if xs != "" {
						out["type"] = strings.ToUpper(xs)
					}
				}
			}
		case "properties":
			props, _ := v.(map[string]any)
			np := map[string]any{}
			for name, ps := range props {
				if m, ok := ps.(map[string]any); ok {
					np[name] = geminiSchema(m)
				}
			}
			out[k] = np
		case "items":
			if m, ok := v.(map[string]any); ok {
				out[k] = geminiSchema(m)
			}
		case "anyOf":
			if arr, ok := v.([]any); ok {
				var na []any
				for _, x := range arr {
					if m, ok := x.(map[string]any); ok {
						na = append(na, geminiSchema(m))
					}
				}
				out[k] = na
			}
		case "enum":
			// Gemini enums are strings.
			arr, _ := v.([]any)
			var na []any
			for _, x := range arr {
				na = append(na, fmt.Sprint(x))
			}
			out[k] = na
		default:
			out[k] = v
		}
	}
	return out
}
