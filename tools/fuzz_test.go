package tools

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/config"
)

type fuzzParams struct {
	FilePath string            `json:"file_path" agentbox:"path"`
	Dir      string            `json:"path,omitempty" agentbox:"path,cwd"`
	Offset   int               `json:"offset,omitempty" minimum:"0"`
	Limit    int               `json:"limit,omitempty" minimum:"1" maximum:"100000"`
	Mode     string            `json:"mode,omitempty" enum:"a,b"`
	Flag     bool              `json:"-i,omitempty"`
	Edits    []fuzzEdit        `json:"edits,omitempty"`
	Extra    map[string]string `json:"extra,omitempty"`
}

type fuzzEdit struct {
	Old string `json:"old_string"`
	New string `json:"new_string"`
}

// FuzzDecodeBackfillValidate runs arbitrary input through the first three
// stages: they must never panic, must fail only with typed errors, and
// whatever they accept must name paths inside the workspace.
func FuzzDecodeBackfillValidate(f *testing.F) {
	for _, s := range []string{
		`{"file_path":"a.txt"}`,
		`{"file_path":"/ws/a","offset":"3","limit":10}`,
		`{"file_path":"../../etc/passwd"}`,
		`{"file_path":"~/x","path":"sub"}`,
		`{"file_path":"a\u0000b"}`,
		`{"file_path":"a","edits":"[{\"old_string\":\"x\",\"new_string\":\"y\"}]"}`,
		`{"file_path":"a","mode":"c"}`,
		`{"file_path":"a","-i":"yes","extra":{"k":"v"}}`,
		`{"file_path":"a","limit":-1}`,
		`{"file_path":1e400}`,
		`[]`, `null`, `{`, `{"file_path":"a"}garbage`,
	} {
		f.Add([]byte(s))
	}
	tool := New("Fuzz", nil_run, ReadOnly(), WithKind(KindRead))
	pp := PathPolicy{Workspace: "/ws", Home: "/home/u", ReadOnlyDirs: []string{"/usr/share/doc"}}
	var cache sync.Map
	f.Fuzz(func(t *testing.T, in []byte) {
		p := tool.NewParams().(*fuzzParams)
		err := Decode(in, p)
		if err == nil {
			err = backfillParams(pp, "/ws/sub", tool, p)
		}
		if err == nil {
			err = validateParams(&cache, tool, p)
		}
		if err != nil {
			var te *ToolError
			if !errors.As(err, &te) {
				t.Fatalf("untyped error %v", err)
			}
			switch te.Kind {
			case ErrValidation, ErrPermissionDenied:
			default:
				t.Fatalf("unexpected kind %s: %v", te.Kind, err)
			}
			return
		}
		for _, path := range []string{p.FilePath, p.Dir} {
			if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
				t.Fatalf("accepted path %q", path)
			}
			if !config.Within(path, "/ws") && !config.Within(path, "/usr/share/doc") {
				t.Fatalf("path %q escapes", path)
			}
		}
		if p.Offset < 0 || (p.Limit != 0 && (p.Limit < 1 || p.Limit > 100000)) {
			t.Fatalf("out of range accepted: %+v", p)
		}
	})
}

var nil_run RunFunc[fuzzParams] = nil
