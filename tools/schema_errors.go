package tools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// explainInvalid checks inst (the params in JSON form) against the schema
// constraints a model most often misses (minimum, maximum, enum, required
// items) and says what is wrong in words written for it ("limit must be
// at least 1; got -1"), naming the field as the model sent it. It returns
// nil when it finds nothing; the schema validator still runs after it.
func explainInvalid(s *jsonschema.Schema, inst any, at string) *ToolError {
	if s == nil {
		return nil
	}
	switch v := inst.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			if te := explainInvalid(s.Properties[k], v[k], joinField(at, k)); te != nil {
				return te
			}
		}
	case []any:
		for i, x := range v {
			if te := explainInvalid(s.Items, x, fmt.Sprintf("%s[%d]", at, i)); te != nil {
				return te
			}
		}
	case float64:
		if s.Minimum != nil && v < *s.Minimum {
			return Errorf(ErrValidation, "%s must be at least %s; got %s", at, num(*s.Minimum), num(v))
		}
		if s.Maximum != nil && v > *s.Maximum {
			return Errorf(ErrValidation, "%s must be at most %s; got %s", at, num(*s.Maximum), num(v))
		}
		if (s.Type == "integer") && v != float64(int64(v)) {
			return Errorf(ErrValidation, "%s must be a whole number; got %s", at, num(v))
		}
	}
	if len(s.Enum) > 0 && inst != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(inst) }) {
		var opts []string
		for _, e := range s.Enum {
			opts = append(opts, fmt.Sprintf("%q", fmt.Sprint(e)))
		}
		got, _ := json.Marshal(inst)
		return Errorf(ErrValidation, "%s must be one of %s; got %s", at, strings.Join(opts, ", "), got)
	}
	return nil
}

func joinField(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// num formats a number the way a person writes it (1, not 1.000000).
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// schemaPath matches the location prefix of jsonschema-go's messages.
var schemaPath = regexp.MustCompile(`validating /properties/([^:/ ]+)(/[^: ]*)?: `)

// ratOne matches the validator's rational numbers with denominator 1.
var ratOne = regexp.MustCompile(`(-?[0-9]+)/1\b`)

// humanSchemaError rewrites what the schema validator says for a model:
// "validating /properties/limit: minimum: ..." becomes "limit: minimum: ...",
// and Go's float formatting of numbers (0.000000) becomes plain.
func humanSchemaError(msg string) string {
	msg = strings.TrimPrefix(msg, "validating root: ")
	msg = schemaPath.ReplaceAllString(msg, "$1: ")
	msg = strings.ReplaceAll(msg, ".000000", "")
	msg = ratOne.ReplaceAllString(msg, "$1")
	return msg
}
