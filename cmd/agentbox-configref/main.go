// Command agentbox-configref writes the configuration reference into
// docs/configuration.md, generated from the config structs: every key
// (dotted, as in a config file; AGENTBOX_<SECTION>_<KEY> in the environment),
// its type, its default (from config.Default) and the doc comment of its
// field.
//
// Run from the repository root: go run ./cmd/agentbox-configref [FILE]
// It replaces the text between the markers
// "<!-- config-reference:start -->" and "<!-- config-reference:end -->" of
// FILE (default docs/configuration.md) and leaves the rest alone. Its test
// fails while the committed file differs from what it would write.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/config"
)

const (
	startMark = "<!-- config-reference:start -->"
	endMark   = "<!-- config-reference:end -->"
	// defaultDoc is the file the reference lives in, from the repository root.
	defaultDoc = "docs/configuration.md"
)

func main() {
	doc := defaultDoc
	if len(os.Args) > 1 {
		doc = os.Args[1]
	}
	if err := run("config", doc); err != nil {
		fmt.Fprintln(os.Stderr, "agentbox-configref:", err)
		os.Exit(1)
	}
}

// run rewrites the reference in the file doc from the config package's
// source in dir.
func run(dir, doc string) error {
	b, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := generate(dir, b)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, out, 0o644)
}

// generate returns doc with the text between its markers replaced by the
// reference rendered from the config package's source in dir.
func generate(dir string, doc []byte) ([]byte, error) {
	docs, err := fieldDocs(dir)
	if err != nil {
		return nil, err
	}
	i, j := bytes.Index(doc, []byte(startMark)), bytes.Index(doc, []byte(endMark))
	if i < 0 || j < i {
		return nil, fmt.Errorf("markers %s ... %s not found", startMark, endMark)
	}
	out := append([]byte{}, doc[:i+len(startMark)]...)
	out = append(out, "\n"+render(docs)...)
	return append(out, doc[j:]...), nil
}

// fieldDocs maps "Type.Field" to the field's doc comment.
func fieldDocs(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(af, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fl := range st.Fields.List {
				text := ""
				if fl.Doc != nil {
					text = fl.Doc.Text()
				}
				for _, name := range fl.Names {
					docs[ts.Name.Name+"."+name.Name] = strings.Join(strings.Fields(text), " ")
				}
			}
			return false
		})
	}
	return docs, nil
}

func render(docs map[string]string) string {
	var b strings.Builder
	def := config.Default()
	v := reflect.ValueOf(def)
	t := v.Type()
	b.WriteString("Generated from the config structs by `go run ./cmd/agentbox-configref`. Keys are as in a YAML config file;\n")
	b.WriteString("the environment variable is `AGENTBOX_` plus the key upper-cased with `.` as `_` (`sandbox.pool_size` →\n")
	b.WriteString("`AGENTBOX_SANDBOX_POOL_SIZE`). `agentbox config show` prints the effective values and where each came from.\n")
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		sec := f.Tag.Get("mapstructure")
		if f.Type.Kind() != reflect.Struct || sec == "" {
			continue
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n| key | type | default | meaning |\n|---|---|---|---|\n", sec)
		st := f.Type
		sv := v.Field(i)
		var rows []string
		lastDocumented := ""
		for k := 0; k < st.NumField(); k++ {
			ff := st.Field(k)
			key := ff.Tag.Get("mapstructure")
			if key == "" || key == "-" {
				continue
			}
			doc := docs[st.Name()+"."+ff.Name]
			if doc == "" && lastDocumented != "" {
				// Fields declared in a group share the first one's comment.
				doc = "See `" + lastDocumented + "`."
			} else if doc != "" {
				lastDocumented = sec + "." + key
			}
			doc = strings.ReplaceAll(doc, "|", "\\|")
			rows = append(rows, fmt.Sprintf("| `%s.%s` | %s | %s | %s |", sec, key, typeName(ff.Type), defaultOf(sv.Field(k)), doc))
		}
		b.WriteString(strings.Join(rows, "\n") + "\n")
	}
	return b.String()
}

func typeName(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Elem())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}

func defaultOf(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		return "`" + d.String() + "`"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "(none)"
		}
		return "`" + v.String() + "`"
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return "(none)"
		}
		var parts []string
		if v.Kind() == reflect.Map {
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%v=%v", k, v.MapIndex(k)))
			}
		} else {
			for i := 0; i < v.Len(); i++ {
				parts = append(parts, fmt.Sprint(v.Index(i)))
			}
		}
		s, _ := json.Marshal(parts)
		return "`" + strings.ReplaceAll(string(s), "|", "\\|") + "`"
	}
	return "`" + fmt.Sprint(v.Interface()) + "`"
}
