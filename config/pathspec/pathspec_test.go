package pathspec

import (
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestOverlap(t *testing.T) {
	tests := []struct {
		rule, word string
		bash       bool
		want       bool
	}{
		{"/ws/**/.env", "/ws/.env", true, true},
		{"/ws/**/.env", "/ws/.e*", true, true},
		{"/ws/**/.env", "/ws/.[e]nv", true, true},
		{"/ws/**/.env", "/ws/.en?", true, true},
		{"/ws/**/.env", "/ws/sub/.env", true, true},
		{"/ws/**/.env", "/ws/**", true, true},    // a run-time part
		{"/ws/**/.env", "/**/.env", true, true},  // $DIR/.env
		{"/ws/**/.env", "/ws/*", true, false},    // bash: * never names a dotfile
		{"/ws/**/.env", "/ws/*", false, true},    // doublestar: it does
		{"/ws/**/.env", "/ws/.*", true, true},    // but .* does
		{"/ws/**/.env", "/ws/*.go", true, false}, // nothing ends in .go and is .env
		{"/ws/**/.env", "/ws/.envrc", true, false},
		{"/ws/**/.env", "/ws/.env?", true, false}, // ? needs one more character
		{"/ws/**/.env.*", "/ws/.env.local", true, true},
		{"/ws/**/.env.*", "/ws/.envrc", true, false},
		{"/ws/**/*.pem", "/ws/*.pem", true, true},
		{"/ws/**/*.pem", "/ws/a/b/c.pem", true, true},
		{"/ws/**/*.pem", "/ws/c.pe", true, false},
		{"/ws/**/*.pem", "/ws/[a-c]", true, false},
		{"/ws/**/*.pem", "/ws/[a-c]*", true, true}, // a.pem
		{"/ws/**/*.pem", "/ws/[a-c]*m", true, true},
		{"/ws/**/id_{rsa,ed25519}*", "/ws/.ssh/id_ed25519", true, true},
		{"/ws/**/id_{rsa,ed25519}*", "/ws/.ssh/id_ecdsa", true, false},
		{"/ws/[!a]", "/ws/a", true, false},
		{"/ws/[!a]", "/ws/b", true, true},
		{"/ws/[!a]", "/ws/[ab]", true, true},
		{"/ws/[a]", "/ws/[!a]", true, false},
		{"/ws/secrets", "/ws/secretsx", true, false},
		{"/ws/secret\\*", "/ws/secret\\*", true, true},
		{"/ws/secret\\*", "/ws/secretx", true, false},
		{"/etc/shadow", "/ws/**", true, false}, // a relative run-time word stays below cwd
		{"/etc/shadow", "/**", true, true},
	}
	for _, tt := range tests {
		if got := Overlap(tt.rule, tt.word, tt.bash); got != tt.want {
			t.Errorf("Overlap(%q, %q, %v) = %v, want %v", tt.rule, tt.word, tt.bash, got, tt.want)
		}
		if !tt.bash {
			continue
		}
		// Overlap is symmetric when neither side is a bash glob.
		if got, want := Overlap(tt.word, tt.rule, false), Overlap(tt.rule, tt.word, false); got != want {
			t.Errorf("Overlap not symmetric for %q and %q", tt.rule, tt.word)
		}
	}
}

func TestCovers(t *testing.T) {
	// A word as the classifier and the permission rules compile it: a
	// bash glob.
	covers := func(rule, word string) bool { return NewRule(rule).Covers(Compiled(word, true)) }
	if !covers("/ws/secrets", "/ws/secrets/k*") || !covers("/ws/**/.ssh", "/ws/.ssh/id_rsa") {
		t.Error("a rule on a directory does not cover what is below it")
	}
	if covers("/ws/secrets", "/ws/src/*") {
		t.Error("a rule covers a sibling")
	}
}

func TestCompile(t *testing.T) {
	tests := []struct{ spec, ws, home, want string }{
		{".env", "/ws", "/h", "/ws/**/.env"},
		{"./x/**", "/ws", "/h", "/ws/x/**"},
		{"/x", "/ws", "/h", "/ws/x"},
		{"a/b/", "/ws", "/h", "/ws/a/b"},
		{"~/.ssh", "/ws", "/h", "/h/.ssh"},
		{"//etc/shadow", "/ws", "/h", "/etc/shadow"},
		{"/x", "/w[s]", "/h", `/w\[s\]/x`},
		{".env", "", "", "/**/.env"},
		{"~/.ssh", "", "", "/~/.ssh"},
		{"/x", "", "", "/x"},
	}
	for _, tt := range tests {
		got, err := Compile(tt.spec, tt.ws, tt.home)
		if err != nil || got != tt.want {
			t.Errorf("Compile(%q, %q, %q) = %q, %v; want %q", tt.spec, tt.ws, tt.home, got, err, tt.want)
		}
	}
	if _, err := Compile("[", "/ws", ""); err == nil {
		t.Error("Compile accepted an invalid pattern")
	}
}

func TestJoin(t *testing.T) {
	tests := []struct{ cwd, home, word, want string }{
		{"/ws", "/h", ".env", "/ws/.env"},
		{"/ws", "/h", "./a/../.env", "/ws/.env"},
		{"/ws", "/h", "/etc/x", "/etc/x"},
		{"/ws", "/h", "~/.ssh/id", "/h/.ssh/id"},
		{"/ws", "", "~/.ssh/id", "/~/.ssh/id"},
		{"/ws", "/h", "**", "/**"},
		{"/ws", "/h", "**/.env", "/**/.env"},
		{"/ws", "/h", "*/../.env", "/**/.env"},
		{"", "", "a", "/a"},
		{"/w[s]", "", "a", `/w\[s\]/a`},
	}
	for _, tt := range tests {
		if got := Join(tt.cwd, tt.home, tt.word); got != tt.want {
			t.Errorf("Join(%q, %q, %q) = %q, want %q", tt.cwd, tt.home, tt.word, got, tt.want)
		}
	}
}

// TestOverlapAgreesWithMatch: for a literal word, Overlap says what
// doublestar's own Match says.
func TestOverlapAgreesWithMatch(t *testing.T) {
	rules := []string{"/ws/**/.env", "/ws/**/.env.*", "/ws/**/*.pem", "/ws/secrets/**", "/ws/[!a]*", "/ws/**/id_{rsa,ed25519}", "/ws/a?c", "/etc/shadow", "/proc/*/environ", `/ws/x\*y`}
	paths := []string{"/ws/.env", "/ws/a/.env", "/ws/.envrc", "/ws/.env.local", "/ws/k.pem", "/ws/a/b/k.pem", "/ws/secrets/x", "/ws/secrets",
		"/ws/b", "/ws/abc", "/ws/.ssh/id_rsa", "/ws/id_ed25519", "/etc/shadow", "/proc/1/environ", "/proc/1/2/environ", "/ws/x*y", "/ws/xzy"}
	for _, r := range rules {
		for _, p := range paths {
			want, err := doublestar.Match(r, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := Overlap(r, EscapeMeta(p), true); got != want {
				t.Errorf("Overlap(%q, %q) = %v, doublestar.Match says %v", r, p, got, want)
			}
			if got, below := NewRule(r).Covers(Compiled(EscapeMeta(p), true)), Match(r, p); got != below {
				t.Errorf("Rule(%q).Covers(%q) = %v, Match says %v", r, p, got, below)
			}
		}
	}
}

func TestBareGlob(t *testing.T) {
	for w, want := range map[string]bool{
		"*": true, "/ws/*": true, "/ws/src/?": true, "/ws/[a-z]*": true, "/ws/*?": true,
		"/ws/*.pem": false, "/ws/.e*": false, "/ws/.*": false, "/ws/*/x": false, "/ws/*/*": false,
		"/ws/.env": false, `/ws/\*`: false, "/ws/{a,b}": false, "/ws/**": true,
	} {
		if _, _, got := BareGlob(w); got != want {
			t.Errorf("BareGlob(%q) = %v, want %v", w, got, want)
		}
	}
}
