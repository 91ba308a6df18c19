package tools

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The model slips both Decode (Go structs) and coerceBySchema (JSON
// Schema) fix, in one place. Each as* function returns v as the wanted
// JSON type and true when v is one already or the model's intent is
// clear; false leaves the error to the caller. Numbers come as
// json.Number (decoded with UseNumber) or float64 (decoded without).

// asBool reads true/false, the strings true/false/yes/no/1/0 (any case,
// spaces trimmed) and the numbers 1 and 0. An empty string is not a
// boolean.
func asBool(v any) (bool, bool) {
	if b, ok := v.(bool); ok {
		return b, true
	}
	s, ok := scalarText(v)
	if !ok {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true", "yes", "1":
		return true, true
	case "false", "no", "0":
		return false, true
	}
	return false, false
}

// asInt reads a whole number, as a number or a string ("10", " 7 ",
// "10.0"); fractions and wholes beyond float64's exact range are not.
func asInt(v any) (int64, bool) {
	s, ok := scalarText(v)
	if !ok {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return 0, false
}

// asFloat reads a finite number, as a number or a string.
func asFloat(v any) (float64, bool) {
	s, ok := scalarText(v)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// asString reads a string, a number (as written) or a boolean.
func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	}
	return numberText(v)
}

// asArray reads an array, an array sent as a JSON string, or (when
// lone is set: a list of strings is wanted) a lone string as a list of
// one.
func asArray(v any, lone, useNumber bool) ([]any, bool) {
	if s, ok := v.(string); ok {
		if parsed, ok := parseEmbedded(s, '[', useNumber); ok {
			v = parsed
		} else if lone {
			return []any{s}, true
		}
	}
	arr, ok := v.([]any)
	return arr, ok
}

// asObject reads an object or an object sent as a JSON string.
func asObject(v any, useNumber bool) (map[string]any, bool) {
	if s, ok := v.(string); ok {
		if parsed, ok := parseEmbedded(s, '{', useNumber); ok {
			v = parsed
		}
	}
	obj, ok := v.(map[string]any)
	return obj, ok
}

// scalarText is the text of a number, or a string with its spaces
// trimmed.
func scalarText(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s), true
	}
	return numberText(v)
}

func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// parseEmbedded decodes s when it is one JSON value that starts with
// open ('[' or '{').
func parseEmbedded(s string, open byte, useNumber bool) (any, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != open {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}
