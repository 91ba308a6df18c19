package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		code := i
		if err := l.Append(context.Background(), Record{Time: time.Unix(int64(1000+i), 0).UTC(), Session: "s", CallID: "c" + string(rune('a'+i)), Tool: "Bash", ExitCode: &code, Changed: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChain(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "a", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Verify(); n != 0 || err != nil {
		t.Fatalf("empty log: %d %v", n, err)
	}
	appendN(t, l, 5)
	recs, err := l.Read()
	if err != nil || len(recs) != 5 {
		t.Fatalf("read: %d %v", len(recs), err)
	}
	if recs[0].Prev != "" || recs[1].Prev != recs[0].Hash || recs[4].Prev != recs[3].Hash {
		t.Fatal("records are not chained")
	}
	if n, err := l.Verify(); n != 5 || err != nil {
		t.Fatalf("verify: %d %v", n, err)
	}
	fi, _ := os.Stat(l.Path())
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestTamper(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(lines []string) []string
		errHas string
	}{
		{"modify a field", func(l []string) []string { l[2] = strings.Replace(l[2], `"tool":"Bash"`, `"tool":"Read"`, 1); return l }, "line 3"},
		{"remove a record", func(l []string) []string { return append(l[:1], l[2:]...) }, "line 2"},
		{"swap records", func(l []string) []string { l[1], l[2] = l[2], l[1]; return l }, "line 2"},
		{"insert a copy", func(l []string) []string { return append(l[:2], append([]string{l[1]}, l[2:]...)...) }, "line 3"},
		{"remove the first", func(l []string) []string { return l[1:] }, "line 1"},
		{"reformat", func(l []string) []string { l[0] = strings.Replace(l[0], `{"time"`, `{ "time"`, 1); return l }, "line 1"},
		{"add a field", func(l []string) []string { l[0] = strings.Replace(l[0], `{"time"`, `{"x":1,"time"`, 1); return l }, "line 1"},
		{"garbage", func(l []string) []string { l[3] = "not json"; return l }, "line 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
			appendN(t, l, 5)
			b, _ := os.ReadFile(l.Path())
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			lines = tt.edit(lines)
			must(t, os.WriteFile(l.Path(), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
			_, err := l.Verify()
			if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("verify = %v, want ErrBroken at %s", err, tt.errHas)
			}
		})
	}
}

func TestTruncatedTail(t *testing.T) {
	l, _ := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	appendN(t, l, 2)
	b, _ := os.ReadFile(l.Path())
	must(t, os.WriteFile(l.Path(), b[:len(b)-10], 0o600))
	if _, err := l.Verify(); !errors.Is(err, ErrBroken) {
		t.Fatalf("verify of a cut log: %v", err)
	}
	if err := l.Append(context.Background(), Record{CallID: "z"}); !errors.Is(err, ErrBroken) {
		t.Fatalf("append after a cut record: %v", err)
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// Two Log values on one file stand in for two processes: the flock,
	// not the mutex, must keep the chain intact.
	l1, _ := Open(path)
	l2, _ := Open(path)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := l1
			if i%2 == 1 {
				l = l2
			}
			if err := l.Append(context.Background(), Record{CallID: "c", Input: []byte(`{"i":1}`)}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if n, err := l1.Verify(); n != 40 || err != nil {
		t.Fatalf("verify: %d %v", n, err)
	}
}

func TestLargeRecordTail(t *testing.T) {
	l, _ := Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	big := strings.Repeat("x", 200<<10)
	for i := 0; i < 3; i++ {
		if err := l.Append(context.Background(), Record{CallID: "c", Error: big}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.Verify(); n != 3 || err != nil {
		t.Fatalf("verify: %d %v", n, err)
	}
}

func TestMaskInput(t *testing.T) {
	tests := []struct {
		in     string
		hidden []string
		kept   []string
	}{
		{`{"command":"curl -H 'Authorization: Bearer abcdef0123456789' x"}`, []string{"abcdef0123456789"}, []string{"curl"}},
		{`{"command":"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`, []string{"ghp_abc"}, []string{"GITHUB_TOKEN="}},
		{`{"command":"mysql --password=hunter2 -u root"}`, []string{"hunter2"}, []string{"--password=", "-u root"}},
		{`{"command":"git clone https://bob:s3cr3t@example.invalid/r.git"}`, []string{"s3cr3t"}, []string{"bob"}},
		{`{"content":"AWS_KEY=AKIAABCDEFGHIJKLMNOP"}`, []string{"AKIAABCDEFGHIJKLMNOP"}, nil},
		{`{"content":"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"}`, []string{"MIIE"}, nil},
		{`{"api_key":"plain","password":"p","nested":{"token":"t0k"},"author":"ann"}`, []string{"plain", `"p"`, "t0k"}, []string{"ann"}},
		{`{"content":"sk-proj-abcdefghijklmnopqrstuv"}`, []string{"abcdefghijklmnop"}, nil},
		{`{"file_path":"/w/a.go","content":"package main"}`, nil, []string{"/w/a.go", "package main"}},
		{`not json password=x`, []string{"password=x"}, nil},
	}
	for _, tt := range tests {
		out := string(MaskInput([]byte(tt.in)))
		for _, h := range tt.hidden {
			if strings.Contains(out, h) {
				t.Errorf("MaskInput(%s) = %s: %q not masked", tt.in, out, h)
			}
		}
		for _, k := range tt.kept {
			if !strings.Contains(out, k) {
				t.Errorf("MaskInput(%s) = %s: %q lost", tt.in, out, k)
			}
		}
	}
	long := MaskString(strings.Repeat("é", 3000))
	if len(long) > MaxString+100 || !strings.Contains(long, "omitted") {
		t.Errorf("long string not shortened: %d", len(long))
	}
}

// TestMaskStringLarge: a huge value (a 20 MB Write's content) is masked in
// bounded time, secrets in the kept part are masked, and the omitted count
// covers the whole rest.
func TestMaskStringLarge(t *testing.T) {
	secret := "token=abcdefghijklmnopqrstuvwxyz0123456789 "
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("A", 70<<10)
	big := secret + strings.Repeat("x", 20<<20)
	start := time.Now()
	got := MaskString(big)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("masking 20 MB took %v", d)
	}
	if strings.Contains(got, "abcdefghijklmnop") || len(got) > MaxString+64 {
		t.Errorf("masked %d bytes: %q…", len(got), got[:80])
	}
	var omitted int
	if i := strings.LastIndex(got, "…["); i < 0 {
		t.Errorf("no omitted count: %q", got[len(got)-40:])
	} else if _, err := fmt.Sscanf(got[i+len("…["):], "%d bytes omitted]", &omitted); err != nil || omitted < len(big)-maskWindow {
		t.Errorf("omitted count %d (%v), want at least %d", omitted, err, len(big)-maskWindow)
	}
	// A private key cut by the masking window is still masked.
	if got := MaskString("x " + key); strings.Contains(got, "AAAAAAAA") {
		t.Errorf("a private key longer than the window leaked: %q…", got[:80])
	}
}

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
