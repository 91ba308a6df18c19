package builtin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestApplyEditShown: in a file with bytes that are not UTF-8, Edit takes
// the text as Read showed it (each such byte a U+FFFD on the wire) and
// keeps every byte outside what it replaces.
func TestApplyEditShown(t *testing.T) {
	const R = "\uFFFD"
	tests := []struct {
		name, content, old, new string
		all                     bool
		want                    string
		fail                    editFailKind // when want == ""
	}{
		{"keep the byte", "name = caf\xe9\nx = 1\n", "caf" + R + "\nx = 1", "caf" + R + "\nx = 2", false, "name = caf\xe9\nx = 2\n", 0},
		{"drop the byte", "name = caf\xe9\n", "caf" + R, "cafe", false, "name = cafe\n", 0},
		{"edit beside it", "\xff\xfe head\nline two\n\x80 tail", "line two", "line 2", false, "\xff\xfe head\nline 2\n\x80 tail", 0},
		{"two bytes kept in order", "a\xe9-\xe8b\n", "a" + R + "-" + R + "b", "A" + R + "+" + R + "B", false, "A\xe9+\xe8B\n", 0},
		{"a real U+FFFD beside a byte", "x" + R + "y \xe9\n", "x" + R + "y", "X" + R + "Y", false, "X" + R + "Y \xe9\n", 0},
		{"replace_all keeps each its own byte", "a\xe9b a\xe8b\n", "a" + R + "b", "[a" + R + "b]", true, "[a\xe9b] [a\xe8b]\n", 0},
		{"CRLF file", "caf\xe9\r\nx\r\n", "caf" + R + "\nx", "caf" + R + "\ny", false, "caf\xe9\r\ny\r\n", 0},
		{"whitespace-tolerant match", "    caf\xe9 = 1\n", "caf" + R + "  = 1", "caf" + R + " = 2", false, "    caf\xe9 = 2\n", 0},
		{"ambiguous", "caf\xe9 caf\xe8\n", "caf" + R, "cafe", false, "", failAmbiguous},
		{"U+FFFD counts differ", "caf\xe9\n", "caf" + R, "caf" + R + R, false, "", failInvalid},
		{"not found", "caf\xe9\n", "tea" + R, "x", false, "", failNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := applyEdit(tt.content, tt.old, tt.new, tt.all)
			if tt.want == "" {
				f, ok := err.(*editFailure)
				if !ok || f.kind != tt.fail {
					t.Fatalf("got %q, %v; want failure %d", o.content, err, tt.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.content != tt.want {
				t.Fatalf("got %q, want %q", o.content, tt.want)
			}
		})
	}
}

// TestEditWhatReadShows: what Read returns, as a JSON client receives it,
// is accepted by Edit, and the file's other bytes stay as they were.
func TestEditWhatReadShows(t *testing.T) {
	env := newEnv(t)
	p := filepath.Join(env.Workspace, "latin1.txt")
	orig := "# caf\xe9 \xff\nprice = 10\n"
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, Read, env, `{"file_path":"`+p+`"}`)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	// The wire: JSON turns each invalid byte into U+FFFD.
	wire, _ := json.Marshal(r.Content)
	var shown string
	json.Unmarshal(wire, &shown)
	line := ""
	for _, l := range strings.Split(shown, "\n") {
		if strings.Contains(l, "caf") {
			line = l[strings.IndexByte(l, '\t')+1:]
		}
	}
	if line != "# caf\uFFFD \uFFFD" {
		t.Fatalf("Read shows %q", line)
	}
	in, _ := json.Marshal(map[string]string{"file_path": p, "old_string": line + "\nprice = 10", "new_string": line + "\nprice = 12"})
	if r := run(t, Edit, env, string(in)); r.Err != nil {
		t.Fatalf("Edit of what Read showed: %v", r.Content)
	}
	if b, _ := os.ReadFile(p); string(b) != "# caf\xe9 \xff\nprice = 12\n" {
		t.Fatalf("file %q", b)
	}
	// A miss shows the closest lines as Read does, not as escapes.
	in, _ = json.Marshal(map[string]string{"file_path": p, "old_string": "# cafe \uFFFD\nprice = 99", "new_string": "x"})
	r = run(t, Edit, env, string(in))
	if r.Err == nil || !strings.Contains(r.Content, "caf\uFFFD") || strings.Contains(r.Content, `\xe9`) {
		t.Fatalf("hint: %q", r.Content)
	}
}

// FuzzApplyEditShown: for any bytes, an edit of text taken from what Read
// shows either fails cleanly or changes exactly the shown text it matched,
// keeping every byte before and after it.
func FuzzApplyEditShown(f *testing.F) {
	f.Add([]byte("name = caf\xe9\nx = 1\n"), uint16(3), uint16(11))
	f.Add([]byte("\xff\xfe\xfd abc \xe9\xe8 abc"), uint16(0), uint16(9))
	f.Add([]byte("a\uFFFDb a\xe9b"), uint16(0), uint16(5))
	f.Fuzz(func(t *testing.T, content []byte, i, j uint16) {
		if bytes.ContainsRune(content, '\r') {
			return // CRLF files take LF in old_string: another property
		}
		c := string(content)
		view, invalid := shownText(c)
		a, b := int(i)%(len(view)+1), int(j)%(len(view)+1)
		if a > b {
			a, b = b, a
		}
		for a > 0 && a < len(view) && !utf8.RuneStart(view[a]) {
			a--
		}
		for b < len(view) && !utf8.RuneStart(view[b]) {
			b++
		}
		old := view[a:b]
		if strings.TrimSpace(old) == "" {
			return
		}
		o, err := applyEdit(c, old, old+"Z", false)
		if err != nil {
			if _, ok := err.(*editFailure); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		at := strings.Index(view, old)
		if got, want := func() string { s, _ := shownText(o.content); return s }(), view[:at]+old+"Z"+view[at+len(old):]; got != want {
			t.Fatalf("shown after the edit %q, want %q", got, want)
		}
		raw := func(v int) int { k, _ := slices.BinarySearch(invalid, v); return v - 2*k }
		if !strings.HasPrefix(o.content, c[:raw(at)]) || !strings.HasSuffix(o.content, c[raw(at+len(old)):]) {
			t.Fatalf("bytes outside the edit changed: %q -> %q", c, o.content)
		}
	})
}
