package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// jsonObject is a JSON object that keeps its keys in file order, so that
// `agentbox setup` can add to a client's config file without reordering
// what a person (or the client) wrote.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func newJSONObject() *jsonObject { return &jsonObject{vals: map[string]any{}} }

func (o *jsonObject) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// parseJSONObject reads a JSON document whose top level is an object;
// empty input is an empty object. Numbers keep their text.
func parseJSONObject(b []byte) (*jsonObject, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return newJSONObject(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeJSONValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON document")
	}
	o, ok := v.(*jsonObject)
	if !ok {
		return nil, errors.New("the top level is not a JSON object")
	}
	return o, nil
}

func decodeJSONValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := newJSONObject()
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeJSONValue(dec)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
		}
		_, err := dec.Token() // '}'
		return o, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeJSONValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token() // ']'
		return list, err
	}
	return t, nil
}

// encode writes v as JSON indented by two spaces (the layout the clients
// write themselves), with a final newline.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	writeJSONValue(&b, v, "")
	b.WriteByte('\n')
	return b.Bytes()
}

func writeJSONValue(b *bytes.Buffer, v any, indent string) {
	switch x := v.(type) {
	case *jsonObject:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range x.keys {
			b.WriteString(indent + "  ")
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSONValue(b, x.vals[k], indent+"  ")
			if i < len(x.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(indent + "  ")
			writeJSONValue(b, e, indent+"  ")
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case string:
		writeJSONString(b, x)
	case json.Number:
		b.WriteString(x.String())
	case bool:
		fmt.Fprint(b, x)
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("setup: unexpected JSON value %T", v))
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
}

// objectAt returns the object at path below o, creating missing ones; it
// fails when something else is in the way.
func objectAt(o *jsonObject, path ...string) (*jsonObject, error) {
	cur := o
	for i, k := range path {
		v, ok := cur.get(k)
		if !ok || v == nil {
			n := newJSONObject()
			cur.set(k, n)
			cur = n
			continue
		}
		next, ok := v.(*jsonObject)
		if !ok {
			return nil, fmt.Errorf("%s is not a JSON object", strings.Join(path[:i+1], "."))
		}
		cur = next
	}
	return cur, nil
}

// addStrings appends to the list of strings at path the items it lacks,
// creating the list (and its parents) when missing.
func addStrings(o *jsonObject, path []string, items []string) error {
	parent, err := objectAt(o, path[:len(path)-1]...)
	if err != nil {
		return err
	}
	key := path[len(path)-1]
	var list []any
	if v, ok := parent.get(key); ok && v != nil {
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s is not a JSON list", strings.Join(path, "."))
		}
		list = l
	}
	for _, it := range items {
		if !slices.ContainsFunc(list, func(e any) bool { s, ok := e.(string); return ok && s == it }) {
			list = append(list, it)
		}
	}
	if list == nil {
		list = []any{}
	}
	parent.set(key, list)
	return nil
}

// existingObjectAt returns the object at path below o, or nil when a
// part of the path is missing (nothing is created); it fails when
// something else is in the way.
func existingObjectAt(o *jsonObject, path ...string) (*jsonObject, error) {
	cur := o
	for i, k := range path {
		v, ok := cur.get(k)
		if !ok || v == nil {
			return nil, nil
		}
		next, ok := v.(*jsonObject)
		if !ok {
			return nil, fmt.Errorf("%s is not a JSON object", strings.Join(path[:i+1], "."))
		}
		cur = next
	}
	return cur, nil
}

// removeStrings drops items from the list of strings at path, when the
// list exists.
func removeStrings(o *jsonObject, path []string, items []string) error {
	parent, err := existingObjectAt(o, path[:len(path)-1]...)
	if parent == nil || err != nil {
		return err
	}
	key := path[len(path)-1]
	v, ok := parent.get(key)
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s is not a JSON list", strings.Join(path, "."))
	}
	kept := slices.DeleteFunc(slices.Clone(list), func(e any) bool { s, ok := e.(string); return ok && slices.Contains(items, s) })
	if len(kept) != len(list) {
		parent.set(key, kept)
	}
	return nil
}

// dropEmptyList removes the list at path when it is empty (an empty
// tools.exclude still makes Gemini CLI warn that the key is deprecated),
// and then its parent object when that is left empty.
func dropEmptyList(o *jsonObject, path []string) error {
	at, key := path[:len(path)-1], path[len(path)-1]
	parent, err := existingObjectAt(o, at...)
	if parent == nil || err != nil {
		return err
	}
	if v, _ := parent.get(key); v != nil {
		if l, isList := v.([]any); isList && len(l) == 0 {
			parent.del(key)
		}
	}
	if len(at) > 0 && len(parent.keys) == 0 {
		grand, err := existingObjectAt(o, at[:len(at)-1]...)
		if grand == nil || err != nil {
			return err
		}
		grand.del(at[len(at)-1])
	}
	return nil
}

// strList turns Go strings into JSON list elements.
func strList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
