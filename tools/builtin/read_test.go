package builtin

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools"
)

// A 1×1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	env := newEnv(t)
	ws := env.Workspace
	long := strings.Repeat("x", 2500)
	writeFiles(t, ws, map[string]string{
		"ten.txt":   numbered(1, 10),
		"long.txt":  "short\n" + long + "\n",
		"big.txt":   numbered(1, 2500),
		"crlf.txt":  "a\r\nb\r\n",
		"empty.txt": "",
		"bin.dat":   "ELF\x00\x01\x02",
		"pic.dat":   string(tinyPNG),
		"sub/x.txt": "x\n",
		"nonl.txt":  "no newline",
		"utf8.txt":  "héllo\n",
	})
	must(t, os.Symlink("/etc/hostname", filepath.Join(ws, "out-link")))
	must(t, os.Symlink("ten.txt", filepath.Join(ws, "in-link")))
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		kind  tools.ErrorKind
		has   []string
		not   []string
	}{
		{name: "whole", input: `{"file_path":"WS/ten.txt"}`, has: []string{"     1\tline 1\n", "    10\tline 10\n"}, not: []string{"Showing"}},
		{name: "offset limit", input: `{"file_path":"WS/ten.txt","offset":3,"limit":2}`, has: []string{"     3\tline 3\n     4\tline 4\n", "Showing lines 3-4 of 10", "offset=5"}, not: []string{"line 2\n", "line 5\n"}},
		{name: "offset to end", input: `{"file_path":"WS/ten.txt","offset":9}`, has: []string{"    10\tline 10", "Showing lines 9-10 of 10"}, not: []string{"offset="}},
		{name: "offset past end", input: `{"file_path":"WS/ten.txt","offset":50}`, kind: tools.ErrValidation, has: []string{"has 10 lines; offset 50 is past the end"}},
		{name: "default limit", input: `{"file_path":"WS/big.txt"}`, has: []string{"  2000\tline 2000\n", "Showing lines 1-2000 of 2500", "offset=2001"}, not: []string{"line 2001"}},
		{name: "long line cut", input: `{"file_path":"WS/long.txt"}`, has: []string{"     2\t" + strings.Repeat("x", 2000) + " … [line cut]", "1 line longer than 2000 characters was cut"}},
		{name: "crlf", input: `{"file_path":"WS/crlf.txt"}`, has: []string{"     1\ta\n     2\tb\n"}, not: []string{"\r"}},
		{name: "no final newline", input: `{"file_path":"WS/nonl.txt"}`, has: []string{"     1\tno newline\n"}},
		{name: "empty", input: `{"file_path":"WS/empty.txt"}`, has: []string{"exists but is empty"}},
		{name: "binary", input: `{"file_path":"WS/bin.dat"}`, kind: tools.ErrValidation, has: []string{"binary file"}},
		{name: "directory", input: `{"file_path":"WS/sub"}`, kind: tools.ErrValidation, has: []string{"is a directory"}},
		{name: "fifo", input: `{"file_path":"WS/fifo"}`, kind: tools.ErrValidation, has: []string{"FIFO"}},
		{name: "device", input: `{"file_path":"/dev/null"}`, kind: tools.ErrPermissionDenied, has: []string{"outside the workspace"}},
		{name: "missing", input: `{"file_path":"WS/nope.txt"}`, kind: tools.ErrNotFound, has: []string{"does not exist"}},
		{name: "symlink out", input: `{"file_path":"WS/out-link"}`, kind: tools.ErrValidation, has: []string{"outside the directories"}},
		{name: "symlink in", input: `{"file_path":"WS/in-link"}`, has: []string{"     1\tline 1"}},
		{name: "image", input: `{"file_path":"WS/pic.dat"}`, has: []string{"(image/png, 70 bytes)"}},
		{name: "utf8", input: `{"file_path":"WS/utf8.txt"}`, has: []string{"héllo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan tools.Result, 1)
			go func() {
				// A fresh session each time, so no "unchanged" stub.
				e := *env
				e.Session = tools.NewSession("t", ws)
				done <- run(t, Read, &e, strings.ReplaceAll(tt.input, "WS", ws))
			}()
			var r tools.Result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read blocked")
			}
			if errKind(r) != tt.kind {
				t.Fatalf("kind %q (%q), want %q", errKind(r), r.Content, tt.kind)
			}
			for _, h := range tt.has {
				if !strings.Contains(r.Content, h) {
					t.Errorf("content lacks %q:\n%s", h, r.Content)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(r.Content, n) {
					t.Errorf("content has %q:\n%s", n, r.Content)
				}
			}
		})
	}
	// The image comes back as image content.
	r := run(t, Read, env, `{"file_path":"`+ws+`/pic.dat"}`)
	if len(r.Images) != 1 || r.Images[0].MIMEType != "image/png" || !bytes.Equal(r.Images[0].Data, tinyPNG) {
		t.Errorf("image content %+v", r.Images)
	}
}

func TestReadUnchangedStub(t *testing.T) {
	env := newEnv(t)
	p := filepath.Join(env.Workspace, "f.txt")
	writeFiles(t, env.Workspace, map[string]string{"f.txt": numbered(1, 5)})
	in := `{"file_path":"` + p + `"}`
	first := run(t, Read, env, in)
	if first.Err != nil || !strings.Contains(first.Content, "line 5") {
		t.Fatalf("first read: %v %q", first.Err, first.Content)
	}
	st, ok := env.Session.LastRead(p)
	if !ok || st.Hash == "" || st.Limit != defaultReadLines {
		t.Fatalf("stamp %+v %v", st, ok)
	}
	second := run(t, Read, env, in)
	if !strings.Contains(second.Content, "unchanged since your last read") || second.Meta["unchanged"] != true {
		t.Fatalf("second read: %q", second.Content)
	}
	// Another window is not a repeat.
	if r := run(t, Read, env, `{"file_path":"`+p+`","offset":2}`); strings.Contains(r.Content, "unchanged") {
		t.Errorf("other window got the stub: %q", r.Content)
	}
	// A change (same size, same second) shows the content again.
	must(t, os.WriteFile(p, []byte(strings.Replace(numbered(1, 5), "line 3", "LINE 3", 1)), 0o644))
	r := run(t, Read, env, `{"file_path":"`+p+`","offset":2}`)
	if !strings.Contains(r.Content, "LINE 3") {
		t.Errorf("changed file: %q", r.Content)
	}
	// A stamp recorded by a write (no window) never yields the stub.
	env.Session.RecordRead(p, tools.ReadStamp{Size: st.Size, Hash: "x"})
	if r := run(t, Read, env, in); strings.Contains(r.Content, "unchanged") {
		t.Errorf("after write stamp: %q", r.Content)
	}
}

func TestReadHugeFile(t *testing.T) {
	env := newEnv(t)
	p := filepath.Join(env.Workspace, "huge.txt")
	f, _ := os.Create(p)
	line := strings.Repeat("y", 199) + "\n"
	for range 30000 { // 6 MB
		f.WriteString(line)
	}
	f.Close()
	r := run(t, Read, env, `{"file_path":"`+p+`"}`)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(r.Content) > maxReadOutput+4096 {
		t.Errorf("output %d bytes, more than the cap", len(r.Content))
	}
	if !strings.Contains(r.Content, "of 30000") || !strings.Contains(r.Content, "offset=") {
		t.Errorf("no window note: %q", r.Content[len(r.Content)-200:])
	}
	r = run(t, Read, env, `{"file_path":"`+p+`","offset":29999,"limit":5}`)
	if !strings.Contains(r.Content, " 29999\t") || !strings.Contains(r.Content, " 30000\t") {
		t.Errorf("tail window: %q", r.Content)
	}
}

func TestReadOnlyDirs(t *testing.T) {
	env := newEnv(t)
	extra, _ := filepath.EvalSymlinks(t.TempDir())
	writeFiles(t, extra, map[string]string{"doc.md": "docs\n"})
	root, err := os.OpenRoot(extra)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	env.ReadOnlyDirs = []string{extra}
	env.ReadRoots = map[string]*os.Root{extra: root}
	if r := run(t, Read, env, `{"file_path":"`+extra+`/doc.md"}`); r.Err != nil || !strings.Contains(r.Content, "docs") {
		t.Fatalf("%v %q", r.Err, r.Content)
	}
	// Writes never go to a read-only dir.
	if r := run(t, Write, env, `{"file_path":"`+extra+`/doc.md","content":"x"}`); r.Err == nil {
		t.Fatal("write to read-only dir succeeded")
	}
}
