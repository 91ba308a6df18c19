package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools"
)

func TestApplyEdit(t *testing.T) {
	tests := []struct {
		name       string
		content    string
		old, new   string
		all        bool
		want       string
		fail       editFailKind
		wantFail   bool
		fuzzy      bool
		reindented bool
		msg        string // substring of the failure message
	}{
		{name: "unique", content: "a\nb\nc\n", old: "b", new: "B", want: "a\nB\nc\n"},
		{name: "multi-line", content: "func f() {\n\treturn 1\n}\n", old: "\treturn 1\n}", new: "\treturn 2\n}", want: "func f() {\n\treturn 2\n}\n"},
		{name: "multiple matches", content: "x x x", old: "x", new: "y", wantFail: true, fail: failAmbiguous, msg: "Found 3 matches"},
		{name: "replace all", content: "x x x", old: "x", new: "y", all: true, want: "y y y"},
		{name: "identical", content: "abc", old: "b", new: "b", wantFail: true, fail: failInvalid, msg: "exactly the same"},
		{name: "crlf kept", content: "one\r\ntwo\r\nthree\r\n", old: "one\ntwo", new: "1\n2", want: "1\r\n2\r\nthree\r\n"},
		{name: "crlf exact", content: "one\r\ntwo\r\n", old: "one\r\n", new: "uno\r\n", want: "uno\r\ntwo\r\n"},
		{name: "lf file keeps lf", content: "a\nb\n", old: "a\n", new: "x\ny\n", want: "x\ny\nb\n"},
		{name: "whitespace normalized",
			content: "func f() {\n\tif x  {\n\t\treturn\n\t}\n}\n",
			old:     "if x {\n    return\n}", new: "if y {\n\treturn\n}",
			want: "func f() {\n\tif y {\n\t\treturn\n\t}\n}\n", fuzzy: true, reindented: true},
		{name: "whitespace normalized mid-line", content: "x := foo(a,  b) + 1\n", old: "foo(a, b)", new: "bar(a, b)", want: "x := bar(a, b) + 1\n", fuzzy: true},
		{name: "whitespace normalized ambiguous", content: "a  b\nc\na b\n", old: "a   b", new: "z", wantFail: true, fail: failAmbiguous, msg: "matches 2 places"},
		{name: "not found shows closest", content: "alpha\nbeta\nfunc handleRequest(w http.ResponseWriter) {\ngamma\n", old: "func handleRequests(w http.ResponseWriter) {", new: "x",
			wantFail: true, fail: failNotFound, msg: "closest text is at lines 3-3"},
		{name: "not found nothing close", content: "aaaa\nbbbb\n", old: "zzzzqqqq", new: "x", wantFail: true, fail: failNotFound, msg: "Read the file again"},
		{name: "empty old fills empty file", content: "", old: "", new: "hello\n", want: "hello\n"},
		{name: "empty old on non-empty file", content: "x", old: "", new: "y", wantFail: true, fail: failInvalid, msg: "use Write"},
		{name: "unicode", content: "héllo wörld\n", old: "wörld", new: "welt", want: "héllo welt\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := applyEdit(tt.content, tt.old, tt.new, tt.all)
			if tt.wantFail {
				var ef *editFailure
				if !errors.As(err, &ef) {
					t.Fatalf("err = %v, want an editFailure", err)
				}
				if ef.kind != tt.fail || !strings.Contains(ef.msg, tt.msg) {
					t.Fatalf("failure kind %d msg %q, want kind %d containing %q", ef.kind, ef.msg, tt.fail, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.content != tt.want {
				t.Errorf("content = %q, want %q", out.content, tt.want)
			}
			if out.fuzzy != tt.fuzzy || out.reindented != tt.reindented {
				t.Errorf("fuzzy %v reindented %v, want %v %v", out.fuzzy, out.reindented, tt.fuzzy, tt.reindented)
			}
		})
	}
}

func TestApplyEditsAtomic(t *testing.T) {
	content := "a\nb\nc\n"
	_, _, err := applyEdits(content, []editSpec{{Old: "a", New: "A"}, {Old: "zzz", New: "Z"}})
	if err == nil || !strings.Contains(err.Error(), "Edit 2 of 2 failed, so none were applied") {
		t.Fatalf("err = %v", err)
	}
	got, outs, err := applyEdits(content, []editSpec{{Old: "a", New: "A"}, {Old: "A\nb", New: "AB"}})
	if err != nil || got != "AB\nc\n" || len(outs) != 2 {
		t.Fatalf("got %q %v %v", got, outs, err)
	}
}

func TestEditTool(t *testing.T) {
	env := newEnv(t)
	p := filepath.Join(env.Workspace, "script.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\r\necho hi\r\necho bye\r\n"), 0o751); err != nil {
		t.Fatal(err)
	}
	r := run(t, Edit, env, `{"file_path":"`+p+`","old_string":"echo hi\necho bye","new_string":"echo hello\necho bye"}`)
	if r.Err != nil {
		t.Fatalf("edit: %v", r.Err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "#!/bin/sh\r\necho hello\r\necho bye\r\n" {
		t.Errorf("content %q", b)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("mode %v, want 0751", fi.Mode().Perm())
	}
	if !strings.Contains(r.Content, "-echo hi\n+echo hello") {
		t.Errorf("no diff in %q", r.Content)
	}

	// Failures change nothing.
	for _, in := range []string{
		`{"file_path":"` + p + `","old_string":"echo","new_string":"x"}`,
		`{"file_path":"` + p + `","old_string":"nothing like it at all","new_string":"x"}`,
	} {
		if r := run(t, Edit, env, in); r.Err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	if b2, _ := os.ReadFile(p); string(b2) != string(b) {
		t.Errorf("failed edit changed the file: %q", b2)
	}

	// MultiEdit: all or nothing.
	r = run(t, MultiEdit, env, `{"file_path":"`+p+`","edits":[{"old_string":"hello","new_string":"HELLO"},{"old_string":"missing","new_string":"x"}]}`)
	if errKind(r) != tools.ErrNotFound || !strings.Contains(r.Content, "Edit 2 of 2") {
		t.Fatalf("multiedit failure: %v %q", r.Err, r.Content)
	}
	if b2, _ := os.ReadFile(p); string(b2) != string(b) {
		t.Errorf("failed multiedit changed the file: %q", b2)
	}
	r = run(t, MultiEdit, env, `{"file_path":"`+p+`","edits":[{"old_string":"hello","new_string":"HELLO"},{"old_string":"bye","new_string":"BYE","replace_all":true}]}`)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\r\necho HELLO\r\necho BYE\r\n" {
		t.Errorf("multiedit content %q", b)
	}

	// Creating with an empty old_string; editing a missing file otherwise fails.
	np := filepath.Join(env.Workspace, "sub", "new.txt")
	if r := run(t, Edit, env, `{"file_path":"`+np+`","old_string":"","new_string":"fresh\n"}`); r.Err != nil {
		t.Fatal(r.Err)
	}
	if b, _ := os.ReadFile(np); string(b) != "fresh\n" {
		t.Errorf("created %q", b)
	}
	if r := run(t, Edit, env, `{"file_path":"`+filepath.Join(env.Workspace, "nope")+`","old_string":"a","new_string":"b"}`); errKind(r) != tools.ErrNotFound {
		t.Errorf("missing file: %v", r.Err)
	}
}

func TestEditRefusals(t *testing.T) {
	env := newEnv(t)
	ws := env.Workspace
	writeFiles(t, ws, map[string]string{"dir/f.txt": "x", "bin.dat": "a\x00b"})
	must(t, os.Symlink("dir/f.txt", filepath.Join(ws, "link")))
	tests := []struct {
		name, path string
		kind       tools.ErrorKind
		msg        string
	}{
		{"directory", filepath.Join(ws, "dir"), tools.ErrValidation, "is a directory"},
		{"symlink", filepath.Join(ws, "link"), tools.ErrValidation, "symbolic link"},
		{"binary", filepath.Join(ws, "bin.dat"), tools.ErrValidation, "binary"},
		{"workspace itself", ws, tools.ErrValidation, "workspace directory"},
		{"outside", "/etc/passwd", tools.ErrValidation, "outside the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, Edit, env, `{"file_path":"`+tt.path+`","old_string":"a","new_string":"b"}`)
			if errKind(r) != tt.kind || !strings.Contains(r.Content, tt.msg) {
				t.Fatalf("got %v %q, want %s containing %q", r.Err, r.Content, tt.kind, tt.msg)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "dir/f.txt")); string(b) != "x" {
		t.Errorf("symlink target changed: %q", b)
	}
}

func TestWriteTool(t *testing.T) {
	env := newEnv(t)
	p := filepath.Join(env.Workspace, "a", "b", "new.txt")
	r := run(t, Write, env, `{"file_path":"`+p+`","content":"one\ntwo\n"}`)
	if r.Err != nil || !strings.Contains(r.Content, "Created") {
		t.Fatalf("%v %q", r.Err, r.Content)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("stat %v %v", fi, err)
	}
	must(t, os.Chmod(p, 0o600))
	r = run(t, Write, env, `{"file_path":"`+p+`","content":"one\n2\n"}`)
	if r.Err != nil || !strings.Contains(r.Content, "-two\n+2") {
		t.Fatalf("%v %q", r.Err, r.Content)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode not kept: %v", fi.Mode().Perm())
	}
	// No sandbox: a clear internal error, nothing written.
	env.Sandbox = nil
	if r := run(t, Write, env, `{"file_path":"`+p+`","content":"x"}`); errKind(r) != tools.ErrInternal || !strings.Contains(r.Content, "no sandbox") {
		t.Errorf("no sandbox: %v %q", r.Err, r.Content)
	}
}
