package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSessionStore(t *testing.T) {
	ws := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	dir := filepath.Join(t.TempDir(), "sessions")
	st := NewSessionStore(dir, ws)
	s, err := st.Load("cli")
	if err != nil || s.Cwd() != ws {
		t.Fatalf("new session: %v %v", s, err)
	}
	s.SetCwd(filepath.Join(ws, "sub"))
	s.RecordRead(filepath.Join(ws, "a"), ReadStamp{Size: 3, Hash: "h", ModTime: time.Unix(5, 0).UTC()})
	s.AddJob("job1")
	s.AddGrant(Grant{Tool: "Bash", Prefix: []string{"npm", "test"}, Scope: GrantSession})
	if err := st.Save(s); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "cli.json"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	s2, err := st.Load("cli")
	if err != nil {
		t.Fatal(err)
	}
	if s2.Cwd() != filepath.Join(ws, "sub") || !s2.HasJob("job1") || len(s2.Grants()) != 1 {
		t.Fatalf("reloaded %+v", s2)
	}
	if r, ok := s2.LastRead(filepath.Join(ws, "a")); !ok || r.Hash != "h" {
		t.Fatal("read tracker lost")
	}
	// A cwd that vanished (or points outside) falls back to the workspace.
	must(t, os.Remove(filepath.Join(ws, "sub")))
	if s3, _ := st.Load("cli"); s3.Cwd() != ws {
		t.Fatalf("stale cwd kept: %s", s3.Cwd())
	}
	must(t, os.WriteFile(filepath.Join(dir, "evil.json"), []byte(`{"id":"evil","cwd":"/etc"}`), 0o600))
	if s4, _ := st.Load("evil"); s4.Cwd() != ws {
		t.Fatalf("outside cwd accepted: %s", s4.Cwd())
	}
	for _, bad := range []string{"", "..", "a/b", "x y", string(make([]byte, 65))} {
		if _, err := st.Load(bad); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Load(%q) = %v", bad, err)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{`), 0o600))
	if _, err := st.Load("broken"); err == nil {
		t.Fatal("corrupt session accepted")
	}
	ids, _ := st.List()
	if len(ids) != 3 {
		t.Fatalf("ids %v", ids)
	}
}

func TestGrantFile(t *testing.T) {
	g := NewGrantFile(filepath.Join(t.TempDir(), "x", "grants.json"))
	if len(g.List()) != 0 {
		t.Fatal("new file has grants")
	}
	for i := 0; i < 2; i++ {
		if err := g.Add(Grant{Tool: "Bash", Prefix: []string{"make"}, Scope: GrantProject}); err != nil {
			t.Fatal(err)
		}
	}
	g.Add(Grant{Tool: "Bash", Prefix: []string{"go", "test"}, Scope: GrantProject})
	if got := g.List(); len(got) != 2 {
		t.Fatalf("grants %+v", got)
	}
}

func TestTruncateText(t *testing.T) {
	tests := []struct {
		in  string
		max int
		cut bool
	}{
		{"short", 100, false},
		{string(make([]byte, 1000)), 1000, false},
		{string(make([]byte, 5000)), 1000, true},
		{"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé", 200, true},
	}
	for i, tt := range tests {
		out, n := truncateText(tt.in, tt.max, 0)
		if (n > 0) != tt.cut {
			t.Errorf("%d: cut %d", i, n)
		}
		if tt.cut && (len(out) > tt.max+10 || len(tt.in)-n+len(out)-len(tt.in)+n < 0) {
			t.Errorf("%d: len %d > %d", i, len(out), tt.max)
		}
		if !tt.cut && out != tt.in {
			t.Errorf("%d: changed", i)
		}
		for j := 0; j < len(out); {
			r, size := rune(out[j]), 1
			if out[j] >= 0x80 {
				var ok bool
				r, size, ok = decodeRune(out[j:])
				if !ok {
					t.Fatalf("%d: invalid UTF-8 at %d", i, j)
				}
			}
			_ = r
			j += size
		}
	}
}

// The note of a cut counts the sandbox's cuts whose notes it replaces,
// and only those: a note still in the text keeps counting its own.
func TestTruncateTextCountsEarlierCuts(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	const out5k, err7k = "\n[... 5000 bytes omitted ...]\n", "\n[... 7000 bytes omitted ...]\n"
	// max 400 keeps about 125 bytes at each end.
	tests := []struct {
		name string
		in   string
		want int64 // the earlier bytes the new note counts
	}{
		// Both streams cut; the dropped middle holds stdout's note only.
		{"one of two notes dropped", x(200) + out5k + x(1000) + err7k + x(20), 5000},
		{"both notes dropped", x(200) + out5k + x(200) + err7k + x(200), 12000},
		{"no note dropped", x(20) + out5k + x(1000) + err7k + x(20), 0},
		// Output that imitates a note counts no more than the sandbox cut.
		{"imitated note", x(200) + "[... 99999 bytes omitted ...]" + out5k + x(200) + err7k + x(200), 12000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, n := truncateText(tt.in, 400, 12000)
			if n == 0 {
				t.Fatalf("not cut: %q", out)
			}
			want := fmt.Sprintf("[... %d bytes omitted (%d of them by the sandbox's output cap);", int64(n)+tt.want, tt.want)
			if tt.want == 0 {
				want = fmt.Sprintf("[... %d bytes omitted;", n)
			}
			if !strings.Contains(out, want) {
				t.Errorf("note does not say %q:\n%s", want, out)
			}
		})
	}
}
