package builtin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools"
)

// searchTree is a small project for Grep, Glob and LS tests.
func searchTree(t *testing.T) *tools.Env {
	env := newEnv(t)
	writeFiles(t, env.Workspace, map[string]string{
		".gitignore":           "build/\n*.log\n!keep.log\n",
		"main.go":              "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n",
		"util/strings.go":      "package util\n\n// Hello says hello.\nfunc Hello() string {\n\treturn \"hello\"\n}\n",
		"util/strings_test.go": "package util\n\nfunc TestHello(t *T) {}\n",
		"web/app.ts":           "export const hello = 1;\nconst x = 2;\n",
		"web/app.js":           "const hello = 1;\n",
		"README.md":            "# Hello\nSay hello.\n",
		"build/out.go":         "package build // hello ignored\n",
		"debug.log":            "hello from a log\n",
		"keep.log":             "hello kept\n",
		"sub/.gitignore":       "gen.go\n",
		"sub/gen.go":           "package sub // hello generated\n",
		"sub/real.go":          "package sub // hello real\n",
		".git/config":          "hello in git\n",
		"data.bin":             "hello\x00binary\n",
		"ctx.txt":              "1\n2\nmatch a\n4\n5\n6\n7\nmatch b\n9\n",
		"multi.txt":            "start {\n  inner\n}\nother\n",
	})
	// Every file at one old time, then a few newer ones: main.go newest.
	base := time.Now().Add(-time.Hour)
	filepath.Walk(env.Workspace, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			must(t, os.Chtimes(p, base, base))
		}
		return nil
	})
	for i, p := range []string{"README.md", "util/strings.go", "web/app.ts", "main.go"} {
		ts := base.Add(time.Duration(i+1) * time.Minute)
		must(t, os.Chtimes(filepath.Join(env.Workspace, p), ts, ts))
	}
	return env
}

func TestGrep(t *testing.T) {
	env := searchTree(t)
	ws := env.Workspace
	tests := []struct {
		name  string
		input string
		want  string // exact content, WS for the workspace
		kind  tools.ErrorKind
	}{
		{name: "files default, gitignore, binary, vcs skipped, newest first",
			input: `{"pattern":"hello"}`,
			want:  "Found 6 files\nWS/web/app.ts\nWS/util/strings.go\nWS/README.md\nWS/keep.log\nWS/sub/real.go\nWS/web/app.js"},
		{name: "case insensitive count",
			input: `{"pattern":"hello","-i":true,"output_mode":"count","path":"WS/util"}`,
			want:  "WS/util/strings.go:3\nWS/util/strings_test.go:1\n\nFound 4 total matching lines across 2 files."},
		{name: "content with line numbers default",
			input: `{"pattern":"^func","output_mode":"content","type":"go"}`,
			want:  "WS/main.go:3:func main() {\nWS/util/strings.go:4:func Hello() string {\nWS/util/strings_test.go:3:func TestHello(t *T) {}"},
		{name: "content without line numbers",
			input: `{"pattern":"hello","output_mode":"content","-n":false,"glob":"*.ts"}`,
			want:  "WS/web/app.ts:export const hello = 1;"},
		{name: "glob braces and negation",
			input: `{"pattern":"hello","glob":"*.{ts,js} !app.js"}`,
			want:  "Found 1 file\nWS/web/app.ts"},
		{name: "context",
			input: `{"pattern":"match","output_mode":"content","-C":1,"path":"WS/ctx.txt"}`,
			want:  "WS/ctx.txt-2-2\nWS/ctx.txt:3:match a\nWS/ctx.txt-4-4\n--\nWS/ctx.txt-7-7\nWS/ctx.txt:8:match b\nWS/ctx.txt-9-9"},
		{name: "after only, overlapping merged",
			input: `{"pattern":"match","output_mode":"content","-A":5,"path":"WS/ctx.txt"}`,
			want:  "WS/ctx.txt:3:match a\nWS/ctx.txt-4-4\nWS/ctx.txt-5-5\nWS/ctx.txt-6-6\nWS/ctx.txt-7-7\nWS/ctx.txt:8:match b\nWS/ctx.txt-9-9"},
		{name: "no cross-line match without multiline",
			input: `{"pattern":"\\{\\s+inner","output_mode":"content","path":"WS/multi.txt"}`,
			want:  "No matches found"},
		{name: "multiline",
			input: `{"pattern":"\\{\\s+inner.*?\\}","multiline":true,"output_mode":"content","path":"WS/multi.txt"}`,
			want:  "WS/multi.txt:1:start {\nWS/multi.txt:2:  inner\nWS/multi.txt:3:}"},
		{name: "head limit content",
			input: `{"pattern":"hello","-i":true,"output_mode":"content","head_limit":2,"path":"WS/util"}`,
			want:  "WS/util/strings.go:3:// Hello says hello.\nWS/util/strings.go:4:func Hello() string {\n\n[Showing 2 of 4 lines (head_limit=2).]"},
		{name: "head limit files",
			input: `{"pattern":"hello","head_limit":1}`,
			want:  "Found 6 files (showing the 1 most recently modified; head_limit=1)\nWS/web/app.ts"},
		{name: "nested gitignore and negation", input: `{"pattern":"hello","path":"WS/sub"}`, want: "Found 1 file\nWS/sub/real.go"},
		{name: "type md", input: `{"pattern":"hello","type":"md","output_mode":"content"}`, want: "WS/README.md:2:Say hello."},
		{name: "no match", input: `{"pattern":"zebra"}`, want: "No files found"},
		{name: "bad regexp", input: `{"pattern":"(unclosed"}`, kind: tools.ErrValidation},
		{name: "lookahead unsupported", input: `{"pattern":"foo(?=bar)"}`, kind: tools.ErrValidation},
		{name: "bad type", input: `{"pattern":"x","type":"cobol"}`, kind: tools.ErrValidation},
		{name: "bad mode", input: `{"pattern":"x","output_mode":"lines"}`, kind: tools.ErrValidation},
		{name: "missing path", input: `{"pattern":"x","path":"WS/nope"}`, kind: tools.ErrNotFound},
		{name: "outside", input: `{"pattern":"x","path":"/etc"}`, kind: tools.ErrPermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.ReplaceAll(tt.input, "WS", ws)
			if !strings.Contains(in, `"path"`) {
				in = strings.TrimSuffix(in, "}") + `,"path":"` + ws + `"}`
			}
			r := run(t, Grep, env, in)
			if errKind(r) != tt.kind {
				t.Fatalf("kind %q (%q), want %q", errKind(r), r.Content, tt.kind)
			}
			if tt.kind != "" {
				return
			}
			if got := strings.ReplaceAll(r.Content, ws, "WS"); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestRequiredLiteral(t *testing.T) {
	tests := []struct {
		pat  string
		fold bool
		want string
	}{
		{"func main", false, "func main"},
		{`\bfoo[a-z]+\(`, false, "foo"},
		{"(?i)hello", false, "hello"},
		{"Hello", true, "hello"},
		{"a|b", false, ""},
		{`ErrNot(Exist|Found)`, false, "ErrNot"},
		{"x", false, "x"},
		{"(abc)+", false, ""},
		{"kelvin", true, "elvin"}, // K folds to the Kelvin sign
		{"errnotexist", true, "errnotexi"},
		{"héllo", true, "llo"},
		{"ks", true, ""},
	}
	for _, tt := range tests {
		got, fold := requiredLiteral(tt.pat, tt.fold)
		if string(got) != tt.want || (got != nil && fold != (tt.fold || strings.HasPrefix(tt.pat, "(?i)"))) {
			t.Errorf("requiredLiteral(%q, %v) = %q %v, want %q", tt.pat, tt.fold, got, fold, tt.want)
		}
	}
}

func TestContainsFold(t *testing.T) {
	tests := []struct {
		data, lit string
		want      bool
	}{
		{"if os.IsNotExist(err)", "isnotexist", true},
		{"ERRNOTEXIST", "errnotexist", true},
		{"errnotexis", "errnotexist", false},
		{"xx errnotexist", "errnotexist", true},
		{"x", "x", true},
		{"", "ab", false},
		{"a-b a_b", "a_b", true},
	}
	for _, tt := range tests {
		if got := containsFold([]byte(tt.data), []byte(tt.lit), rareIndex([]byte(tt.lit))); got != tt.want {
			t.Errorf("containsFold(%q, %q) = %v", tt.data, tt.lit, got)
		}
	}
}

func TestGlob(t *testing.T) {
	env := searchTree(t)
	ws := env.Workspace
	tests := []struct {
		name, input, want string
		kind              tools.ErrorKind
	}{
		{name: "recursive newest first", input: `{"pattern":"**/*.go"}`, want: "WS/main.go\nWS/util/strings.go\nWS/sub/real.go\nWS/util/strings_test.go"},
		{name: "top level only", input: `{"pattern":"*.go"}`, want: "WS/main.go"},
		{name: "static prefix", input: `{"pattern":"util/*.go"}`, want: "WS/util/strings.go\nWS/util/strings_test.go"},
		{name: "braces", input: `{"pattern":"web/*.{ts,js}"}`, want: "WS/web/app.ts\nWS/web/app.js"},
		{name: "absolute pattern", input: `{"pattern":"WS/web/*.ts"}`, want: "WS/web/app.ts"},
		{name: "with path", input: `{"pattern":"*.ts","path":"WS/web"}`, want: "WS/web/app.ts"},
		{name: "gitignored and vcs skipped", input: `{"pattern":"**/{out.go,config,debug.log,keep.log}"}`, want: "WS/keep.log"},
		{name: "none", input: `{"pattern":"**/*.rs"}`, want: "No files found"},
		{name: "dotdot", input: `{"pattern":"../*"}`, kind: tools.ErrValidation},
		{name: "bad", input: `{"pattern":"[a"}`, kind: tools.ErrValidation},
		{name: "missing dir", input: `{"pattern":"*","path":"WS/nope"}`, kind: tools.ErrNotFound},
		{name: "file as dir", input: `{"pattern":"*","path":"WS/main.go"}`, kind: tools.ErrValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.ReplaceAll(tt.input, "WS", ws)
			if !strings.Contains(in, `"path"`) {
				in = strings.TrimSuffix(in, "}") + `,"path":"` + ws + `"}`
			}
			r := run(t, Glob, env, in)
			if errKind(r) != tt.kind {
				t.Fatalf("kind %q (%q), want %q", errKind(r), r.Content, tt.kind)
			}
			if tt.kind != "" {
				return
			}
			if got := strings.ReplaceAll(r.Content, ws, "WS"); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	env := newEnv(t)
	files := map[string]string{}
	for i := range 150 {
		files[filepath.Join("d", strings.Repeat("f", 1+i%5)+string(rune('a'+i%26))+filepath.Base(t.Name())+string(rune('A'+i/26))+".txt")] = "x"
	}
	writeFiles(t, env.Workspace, files)
	r := run(t, Glob, env, `{"pattern":"**/*.txt","path":"`+env.Workspace+`"}`)
	lines := strings.Split(r.Content, "\n")
	if len(lines) != maxGlobResults+1 || !strings.Contains(lines[maxGlobResults], "Showing the 100 most recently modified of 150") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestLS(t *testing.T) {
	env := searchTree(t)
	ws := env.Workspace
	r := run(t, LS, env, `{"path":"`+ws+`","ignore":["web","*.txt"]}`)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := `- WS/
  - sub/
    - .gitignore
    - real.go
  - util/
    - strings.go
    - strings_test.go
  - .gitignore
  - README.md
  - data.bin
  - keep.log
  - main.go`
	if got := strings.ReplaceAll(r.Content, ws, "WS"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	for in, kind := range map[string]tools.ErrorKind{
		`{"path":"` + ws + `/main.go"}`:         tools.ErrValidation,
		`{"path":"` + ws + `/nope"}`:            tools.ErrNotFound,
		`{"path":"/etc"}`:                       tools.ErrPermissionDenied,
		`{"path":"` + ws + `","ignore":["[x"]}`: tools.ErrValidation,
	} {
		if r := run(t, LS, env, in); errKind(r) != kind {
			t.Errorf("%s: %v, want %s", in, r.Err, kind)
		}
	}
}

func TestLSCap(t *testing.T) {
	env := newEnv(t)
	files := map[string]string{}
	for i := range 1200 {
		files[filepath.Join("d", "f"+strings.Repeat("0", 4-len(itoa(i)))+itoa(i))] = ""
	}
	writeFiles(t, env.Workspace, files)
	r := run(t, LS, env, `{"path":"`+env.Workspace+`"}`)
	if !strings.Contains(r.Content, "[Showing 1000 of 1201 entries.") {
		t.Errorf("no cap note: %q", r.Content[len(r.Content)-200:])
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
