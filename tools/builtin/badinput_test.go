package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools"
)

// TestBadInputThroughPipeline sends malformed and hostile calls to the
// built-in tools through the real pipeline: each must come back as a typed
// error, never a panic or an internal failure, and change nothing.
func TestBadInputThroughPipeline(t *testing.T) {
	h := newPipeline(t)
	ws := h.env.Workspace
	writeFiles(t, ws, map[string]string{"dir/f.txt": "hello\n", "keep.txt": "keep\n"})
	huge := strings.Repeat("a", 10<<20)
	tests := []struct {
		name  string
		tool  string
		input any
		kinds []tools.ErrorKind // any of these
	}{
		{"malformed json", "Read", `{"file_path": `, []tools.ErrorKind{tools.ErrValidation}},
		{"not an object", "Read", `["x"]`, []tools.ErrorKind{tools.ErrValidation}},
		{"unknown field", "Read", `{"file_path":"` + ws + `/keep.txt","path":"x"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"wrong type", "Read", `{"file_path":"` + ws + `/keep.txt","offset":"many"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"missing required", "Edit", `{"file_path":"` + ws + `/keep.txt"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"nul in path", "Read", map[string]any{"file_path": ws + "/keep\x00.txt"}, []tools.ErrorKind{tools.ErrValidation}},
		{"nul in write path", "Write", map[string]any{"file_path": ws + "/x\x00y", "content": "x"}, []tools.ErrorKind{tools.ErrValidation}},
		{"traversal", "Read", `{"file_path":"` + ws + `/../../etc/passwd"}`, []tools.ErrorKind{tools.ErrPermissionDenied, tools.ErrValidation}},
		{"traversal write", "Write", `{"file_path":"` + ws + `/dir/../../escape.txt","content":"x"}`, []tools.ErrorKind{tools.ErrPermissionDenied, tools.ErrValidation}},
		{"relative traversal", "Read", `{"file_path":"../../../etc/passwd"}`, []tools.ErrorKind{tools.ErrPermissionDenied, tools.ErrValidation}},
		{"home path", "Read", `{"file_path":"~/.ssh/id_rsa"}`, []tools.ErrorKind{tools.ErrPermissionDenied, tools.ErrValidation}},
		{"directory as file", "Read", `{"file_path":"` + ws + `/dir"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"directory as edit target", "Edit", `{"file_path":"` + ws + `/dir","old_string":"a","new_string":"b"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"directory as write target", "Write", `{"file_path":"` + ws + `/dir","content":"x"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"file as LS dir", "LS", `{"path":"` + ws + `/keep.txt"}`, []tools.ErrorKind{tools.ErrValidation}},
		{"10 MB pattern", "Grep", map[string]any{"pattern": huge, "path": ws}, []tools.ErrorKind{tools.ErrValidation}},
		{"10 MB old_string", "Edit", map[string]any{"file_path": ws + "/keep.txt", "old_string": huge, "new_string": "x"}, []tools.ErrorKind{tools.ErrValidation, tools.ErrNotFound, tools.ErrConflict}},
		{"10 MB glob", "Glob", map[string]any{"pattern": "[" + huge, "path": ws}, []tools.ErrorKind{tools.ErrValidation}},
		{"negative limit", "Read", `{"file_path":"` + ws + `/keep.txt","limit":-5}`, []tools.ErrorKind{tools.ErrValidation}},
		{"huge timeout", "Bash", `{"command":"true","timeout":99999999}`, []tools.ErrorKind{tools.ErrValidation}},
		{"empty edits", "MultiEdit", `{"file_path":"` + ws + `/keep.txt","edits":[]}`, []tools.ErrorKind{tools.ErrValidation}},
		{"unknown tool", "Reed", `{}`, []tools.ErrorKind{tools.ErrNotFound, tools.ErrValidation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.call(tt.tool, tt.input)
			if r.Err == nil {
				t.Fatalf("no error; content %.200q", r.Content)
			}
			ok := false
			for _, k := range tt.kinds {
				ok = ok || r.Err.Kind == k
			}
			if !ok {
				t.Fatalf("kind %s (%.300q), want one of %v", r.Err.Kind, r.Content, tt.kinds)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != "keep\n" {
		t.Errorf("keep.txt changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escape.txt")); err == nil {
		t.Errorf("a write escaped the workspace")
	}
}

// TestPipelineReadThenEdit checks the tools against the pipeline's
// read-before-write stage and its field names (as the model sends them).
func TestPipelineReadThenEdit(t *testing.T) {
	h := newPipeline(t)
	ws := h.env.Workspace
	writeFiles(t, ws, map[string]string{"a.txt": "one\ntwo\n"})
	if r := h.call("Edit", `{"file_path":"a.txt","old_string":"one","new_string":"1"}`); r.Err == nil || r.Err.Kind != tools.ErrConflict {
		t.Fatalf("edit before read: %v", r.Err)
	}
	if r := h.call("Read", `{"file_path":"a.txt"}`); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := h.call("Edit", `{"file_path":"a.txt","old_string":"one","new_string":"1"}`); r.Err != nil {
		t.Fatalf("edit after read: %v %q", r.Err, r.Content)
	}
	if r := h.call("MultiEdit", `{"file_path":"a.txt","edits":[{"old_string":"two","new_string":"2"}]}`); r.Err != nil {
		t.Fatalf("second edit: %v %q", r.Err, r.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "1\n2\n" {
		t.Fatalf("content %q", b)
	}
	// After edits the model has not seen the whole file: no stub.
	if r := h.call("Read", `{"file_path":"a.txt"}`); r.Err != nil || !strings.Contains(r.Content, "     1\t1\n") {
		t.Fatalf("read after edit: %v %q", r.Err, r.Content)
	}
	if r := h.call("Read", `{"file_path":"a.txt"}`); !strings.Contains(r.Content, "unchanged since your last read") {
		t.Fatalf("repeat read: %q", r.Content)
	}
	// Grep's dash-named fields decode.
	r := h.call("Grep", `{"pattern":"^1$","-n":true,"-i":true,"-C":1,"output_mode":"content","head_limit":"5"}`)
	if r.Err != nil || !strings.Contains(r.Content, "a.txt:1:1") {
		t.Fatalf("grep: %v %q", r.Err, r.Content)
	}
}

func FuzzApplyEdit(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", false)
	f.Add("x  y\r\nz\r\n", "x y\nz", "q", false)
	f.Add("\t\tif a {\n\t\t\treturn\n\t\t}\n", "if a {\n  return\n}", "if b {\n  return\n}", false)
	f.Add("aaa", "a", "b", true)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		out, err := applyEdit(content, old, new, all)
		if err != nil {
			if _, ok := err.(*editFailure); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if old != "" && !out.fuzzy && !usesCRLF(content) && !strings.Contains(content, old) {
			t.Fatalf("exact edit of text that is not there")
		}
		if out.replacements < 1 {
			t.Fatalf("success without replacement")
		}
	})
}

func FuzzGrepContent(f *testing.F) {
	f.Add([]byte("a\nfoo bar\n\nbaz\n"), "ba.", false, 1)
	f.Add([]byte("x\r\ny\n"), `\s`, true, 0)
	f.Add([]byte(""), "^", false, 2)
	f.Fuzz(func(t *testing.T, data []byte, pattern string, multiline bool, ctx int) {
		re, err := compileGrepPattern(pattern, false, multiline)
		if err != nil {
			return
		}
		ctx = max(0, min(ctx, 5))
		lit, _ := requiredLiteral(pattern, false)
		spec := &grepSpec{re: re, multiline: multiline, mode: modeContent, before: ctx, after: ctx, literal: lit}
		n, lines := grepContent(data, spec)
		if n < 0 || len(lines) < min(n, 1) {
			t.Fatalf("count %d, %d lines", n, len(lines))
		}
		prev := 0
		for _, l := range lines {
			if l.n <= prev {
				t.Fatalf("lines out of order: %v", lines)
			}
			prev = l.n
		}
	})
}
