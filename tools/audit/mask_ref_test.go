package audit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// maskStringRef is MaskString without prefilters: every regexp runs on
// every string. The prefiltered MaskString must agree with it on every
// input.
func maskStringRef(s string) string {
	s, omittedBeyond := window(s)
	for _, f := range secretValues {
		s = f.re.ReplaceAllString(s, Mask)
	}
	s = assignment.re.ReplaceAllString(s, "${1}"+Mask)
	s = userinfo.re.ReplaceAllString(s, "${1}"+Mask+"@")
	if len(s) > MaxString || omittedBeyond > 0 {
		cut := min(MaxString, len(s))
		for cut > 0 && cut < len(s) && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…[" + itoa(len(s)-cut+omittedBeyond) + " bytes omitted]"
	}
	return s
}

// benchContent is what `agentbox bench tools` writes with Write.
var benchContent = "marker 7\n" + strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100)

// maskCorpus is realistic input: code, prose, and secrets of every kind
// the regexps know, also spelt through Unicode case folds.
func maskCorpus(t testing.TB) []string {
	in := []string{
		"",
		benchContent,
		"package main\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n",
		"go test ./... && git status",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
		"x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
		"-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
		"AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP",
		"key AKIAABCDEFGHIJKLMNO short",
		"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"gho_abcdefghijklmnopqrstuvwxyz ghu_abcdefghijklmnopqrstuvwx ghs_abcdefghijklmnopqrstuv ghr_abcdefghijklmnopqrstuv",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
		"through the high ghp_short",
		"sk-proj-abcdefghijklmnopqrstuv rk-live_abcdefghijklmnop pk-test-0123456789abcdef",
		"lock-free check-in desk-top",
		"xoxb-1234567890-abcdefghij xoxp-0123456789abc",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
		"curl -H 'Authorization: Bearer abcdef0123456789' https://x.invalid",
		"Authorization: Basic dXNlcjpwYXNzd29yZA==",
		"BEARER   abcdefghijkl",
		"ba\u017fic abcdefghijkl", // long s folds to s
		"BA\u017fIC\tabcdefghijkl",
		"mysql --password=hunter2 -u root",
		"mysql --password hunter2 -u root",
		"pa\u017fsword=hunter2", // long s
		"GITHUB_TO\u212aEN=abc", // Kelvin sign
		"api_key: 'a b c' apiKey=\"x y\" API-KEY=z",
		"private_key=abc PRIVATEKEY=d private-key e",
		"db_credentials: s3cr3t",
		"SECRET_VALUE=1 client_secret=2",
		"\"token\":\"abc\" 'pass' 'word'",
		"git clone https://bob:s3cr3t@example.invalid/r.git",
		"https://example.invalid/a@b ftp://user@host",
		"ssh://git:pw@host:22/x and mailto:a@b",
		"é à ü ĳ 𝔘 \xff\xfe invalid utf-8 token=\xffabc",
		"tokenization token\ttoken= token: \"quoted secret\"",
		strings.Repeat("é", 3000),
		strings.Repeat("password=x ", 300),
		"token=abcdefghijklmnopqrstuvwxyz0123456789 " + strings.Repeat("x", 70<<10),
		"x -----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("A", 70<<10),
	}
	// The Go source of this package: code, with regexps full of the
	// literals.
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, string(b))
	}
	return in
}

func TestMaskStringMatchesReference(t *testing.T) {
	for _, s := range maskCorpus(t) {
		if got, want := MaskString(s), maskStringRef(s); got != want {
			t.Errorf("MaskString(%.60q)\n got %.200q\nwant %.200q", s, got, want)
		}
	}
}

// TestMaskStringFolds: the regexps fold case through Unicode (the Kelvin
// sign matches k, the long s matches s); masking must too.
func TestMaskStringFolds(t *testing.T) {
	if asciiFolds['\u212a'] != 'k' || asciiFolds['\u017f'] != 's' {
		t.Fatalf("asciiFolds = %q", asciiFolds)
	}
	for _, s := range []string{"pa\u017fsword=hunter2", "to\u212aen=hunter2", "ba\u017fic hunter2hunter2"} {
		if got := MaskString(s); strings.Contains(got, "hunter2") {
			t.Errorf("MaskString(%q) = %q: not masked", s, got)
		}
	}
	// Every literal of every (?i) regexp is found through any fold of
	// its letters.
	for _, f := range append(append([]filtered(nil), secretValues...), assignment) {
		if !f.folded {
			continue
		}
		for _, lit := range f.anyOf {
			for _, r := range []rune{'k', 's'} {
				for fold := range asciiFolds {
					if asciiFolds[fold] != r {
						continue
					}
					s := strings.ReplaceAll(strings.ToUpper(lit), string(r-'a'+'A'), string(fold))
					var folded string
					have := false
					if !f.maybe(s, &folded, &have) {
						t.Errorf("prefilter of %v rules out %q", f.re, s)
					}
				}
			}
		}
	}
}

// TestPrefilterLiterals: each literal is one every match contains: the
// regexp cannot match any corpus text once all its literals are removed.
func TestPrefilterLiterals(t *testing.T) {
	all := append(append([]filtered(nil), secretValues...), assignment, userinfo)
	for _, s := range maskCorpus(t) {
		for _, f := range all {
			var folded string
			have := false
			if !f.maybe(s, &folded, &have) && f.re.MatchString(s) {
				t.Errorf("prefilter of %v rules out %.80q, which it matches", f.re, s)
			}
		}
	}
	// A literal that does not rule out its regexp's matches is caught.
	bad := filtered{regexp.MustCompile(`(?i)token`), true, []string{"tok_en"}}
	var folded string
	have := false
	if bad.maybe("token", &folded, &have) {
		t.Fatal("a wrong literal passed")
	}
}

func FuzzMaskString(f *testing.F) {
	for _, s := range maskCorpus(f) {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := MaskString(s), maskStringRef(s); got != want {
			t.Errorf("MaskString(%q)\n got %q\nwant %q", s, got, want)
		}
	})
}

// BenchmarkMaskString compares MaskString with the unfiltered reference
// on the bench's Write content, on Go code and on a line with a secret;
// "speedup" is reference time over filtered time.
func BenchmarkMaskString(b *testing.B) {
	code, _ := os.ReadFile("audit.go")
	for _, c := range []struct{ name, s string }{
		{"bench-write", benchContent},
		{"go-code", string(code)},
		{"secret-line", "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 && curl https://bob:pw@x.invalid"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.StopTimer()
			t0 := time.Now()
			for i := 0; i < b.N; i++ {
				maskStringRef(c.s)
			}
			ref := time.Since(t0)
			b.StartTimer()
			for i := 0; i < b.N; i++ {
				MaskString(c.s)
			}
			b.StopTimer()
			if e := b.Elapsed(); e > 0 {
				b.ReportMetric(float64(ref)/float64(e), "speedup")
				b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "ref-ns/op")
			}
		})
	}
}
