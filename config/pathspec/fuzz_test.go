package pathspec

import (
	"path"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// FuzzOverlap checks Overlap against doublestar's own matcher: whenever
// doublestar matches a literal path with a rule's pattern (a specifier
// compiled by Compile), the path's escaped pattern overlaps it (Overlap
// may say more, never less), and nothing panics or takes long.
func FuzzOverlap(f *testing.F) {
	for _, s := range [][2]string{
		{".env", "/ws/.env"}, {"*.pem", "/ws/a/b.pem"}, {"/[!a]*", "/ws/b"},
		{"/{a,b}/**", "/ws/a"}, {`/x\*`, "/ws/x*"}, {"a?c", "/ws/abc"}, {"//proc/*/environ", "/proc/1/environ"}, {"~/.ssh", "/h/.ssh/id"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, spec, p string) {
		// Paths are absolute and clean, as the rules see them.
		// (The classifier refuses invalid UTF-8 before any path is judged.)
		if len(spec) > 200 || len(p) > 200 || strings.ContainsAny(p, "\\") || !strings.HasPrefix(p, "/") || path.Clean(p) != p ||
			!utf8.ValidString(spec) || !utf8.ValidString(p) {
			return
		}
		rule, err := Compile(spec, "/ws", "/h")
		if err != nil {
			return
		}
		timer := time.AfterFunc(5*time.Second, func() { panic("Overlap took more than 5s") })
		defer timer.Stop()
		want, err := doublestar.Match(rule, p)
		if err != nil || !doublestar.ValidatePattern(rule) {
			return
		}
		if want && !Overlap(rule, EscapeMeta(p), false) {
			t.Fatalf("doublestar.Match(%q, %q) but no Overlap", rule, p)
		}
		// A Rule (with its cheap name checks) covers what Match matches:
		// the path or a parent.
		if Match(rule, p) && !NewRule(rule).Covers(Compiled(EscapeMeta(p), true)) {
			t.Fatalf("Match(%q, %q) but the Rule does not cover it", rule, p)
		}
		Overlap(rule, p, true) // any pair of patterns: no panic
	})
}
