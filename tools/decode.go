package tools

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Decode decodes a call's JSON input into params (a pointer from
// NewParams) strictly: the input must be one JSON object, unknown fields
// are rejected by name, required fields must be present, and values of
// the wrong JSON type are coerced where a model's intent is clear ("10" →
// 10, "true" → true, 10 → "10", a JSON-encoded array or object inside a
// string → the array or object). Anything else is a validation [ToolError]
// naming the field.
//
// Params that are not pointers to structs (MCP-sourced tools) are decoded
// as plain JSON; their schema is checked in the validate stage.
func Decode(input []byte, params any) error {
	input = bytes.TrimSpace(input)
	if len(input) == 0 {
		input = []byte("{}")
	}
	rv := reflect.ValueOf(params)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode: params must be a non-nil pointer, not %T", params)
	}
	if rv.Elem().Kind() != reflect.Struct {
		if input[0] != '{' {
			return Errorf(ErrValidation, "the input must be a JSON object")
		}
		if err := json.Unmarshal(input, params); err != nil {
			return Errorf(ErrValidation, "malformed JSON input: %s", jsonErrText(err))
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return Errorf(ErrValidation, "malformed JSON input: %s", jsonErrText(err))
	}
	if dec.More() {
		return Errorf(ErrValidation, "malformed JSON input: more than one JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return Errorf(ErrValidation, "malformed JSON input: trailing data after the object")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return Errorf(ErrValidation, "the input must be a JSON object, not %s", jsonType(raw))
	}
	fixed, err := coerceStruct(rv.Elem().Type(), obj, "")
	if err != nil {
		return err
	}
	buf, err := json.Marshal(fixed)
	if err != nil {
		return fmt.Errorf("decode: re-encoding: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(buf))
	d.DisallowUnknownFields()
	if err := d.Decode(params); err != nil {
		return Errorf(ErrValidation, "invalid input: %s", jsonErrText(err))
	}
	return nil
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

type fieldInfo struct {
	name     string
	typ      reflect.Type
	required bool
}

func structFields(t reflect.Type) (map[string]fieldInfo, []string) {
	fields := map[string]fieldInfo{}
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		req := !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,")
		fields[name] = fieldInfo{name: name, typ: f.Type, required: req}
		names = append(names, name)
	}
	sort.Strings(names)
	return fields, names
}

func coerceStruct(t reflect.Type, obj map[string]any, at string) (map[string]any, error) {
	fields, names := structFields(t)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(obj))
	for _, k := range keys {
		f, ok := fields[k]
		if !ok {
			return nil, Errorf(ErrValidation, "unknown field %q%s (valid fields: %s)", at+k, suggest(k, names), strings.Join(names, ", "))
		}
		v, err := coerceValue(f.typ, obj[k], at+k)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue // null means absent
		}
		out[k] = v
	}
	for _, n := range names {
		if f := fields[n]; f.required {
			if _, ok := out[n]; !ok {
				return nil, Errorf(ErrValidation, "missing required field %q", at+n)
			}
		}
	}
	return out, nil
}

func suggest(k string, names []string) string {
	lk := strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, n := range names {
		if strings.ToLower(strings.ReplaceAll(n, "-", "_")) == lk || strings.ToLower(strings.ReplaceAll(n, "_", "")) == strings.ReplaceAll(lk, "_", "") {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
	}
	return ""
}

func coerceValue(t reflect.Type, v any, at string) (any, error) {
	if v == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return v, nil
	}
	switch k := t.Kind(); {
	case k >= reflect.Int && k <= reflect.Uint64:
		return coerceInt(t, v, at)
	case k == reflect.Slice || k == reflect.Array:
		return coerceArray(t, v, at)
	case k == reflect.Struct:
		obj, ok := asObject(v, true)
		if !ok {
			return nil, typeErr(at, "an object", v)
		}
		return coerceStruct(t, obj, at+".")
	case k == reflect.Map:
		return coerceMap(t, v, at)
	case k == reflect.Interface:
		return v, nil
	}
	return coerceScalar(t, v, at)
}

// coerceScalar coerces v for a string, boolean or floating-point type t;
// any other type takes no value.
func coerceScalar(t reflect.Type, v any, at string) (any, error) {
	switch t.Kind() {
	case reflect.String:
		if s, ok := asString(v); ok {
			return s, nil
		}
	case reflect.Bool:
		if b, ok := asBool(v); ok {
			return b, nil
		}
	case reflect.Float32, reflect.Float64:
		f, ok := asFloat(v)
		if !ok {
			return nil, typeErr(at, "a number", v)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return nil, typeErr(at, jsonKindOf(t), v)
}

// coerceInt coerces v for an integer type t (Int through Uint64; Uintptr
// is not among them: reflect orders Uintptr after Uint64).
func coerceInt(t reflect.Type, v any, at string) (any, error) {
	n, ok := asInt(v)
	if !ok {
		return nil, typeErr(at, "an integer", v)
	}
	if overflows(t, n) {
		s, _ := scalarText(v)
		return nil, Errorf(ErrValidation, "field %q: %s is out of range", at, s)
	}
	return json.Number(strconv.FormatInt(n, 10)), nil
}

func coerceArray(t reflect.Type, v any, at string) (any, error) {
	arr, ok := asArray(v, t.Elem().Kind() == reflect.String, true)
	if !ok {
		return nil, typeErr(at, "an array", v)
	}
	out := make([]any, len(arr))
	for i, e := range arr {
		c, err := coerceValue(t.Elem(), e, fmt.Sprintf("%s[%d]", at, i))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func coerceMap(t reflect.Type, v any, at string) (any, error) {
	obj, ok := asObject(v, true)
	if !ok {
		return nil, typeErr(at, "an object", v)
	}
	out := make(map[string]any, len(obj))
	for k, e := range obj {
		c, err := coerceValue(t.Elem(), e, at+"."+k)
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	return out, nil
}

func overflows(t reflect.Type, n int64) bool {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n < 0 {
			return true
		}
		return reflect.New(t).Elem().OverflowUint(uint64(n))
	}
	return reflect.New(t).Elem().OverflowInt(n)
}

func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return "a value of type " + t.String()
}

func typeErr(at, want string, v any) error {
	return Errorf(ErrValidation, "field %q: expected %s, got %s", at, want, describe(v))
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + x.String()
	}
	return jsonType(v)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func jsonErrText(err error) string {
	var se *json.SyntaxError
	if e, ok := err.(*json.SyntaxError); ok {
		se = e
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var ue *json.UnmarshalTypeError
	if e, ok := err.(*json.UnmarshalTypeError); ok {
		ue = e
		return fmt.Sprintf("field %q: expected %s, got %s", ue.Field, ue.Type, ue.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
