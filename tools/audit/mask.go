package audit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// secretKey matches object keys whose values are secrets.
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|auth(orization)?|credential|private[_-]?key|session[_-]?key|cookie)`)

// secretValues match secret-looking text inside strings; each is masked
// whole. Each comes with the literals one of which every match contains
// (see prefilter).
var secretValues = []filtered{
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`), false, []string{"-----BEGIN "}},
	{regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), false, []string{"AKIA"}},
	{regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b`), false, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{regexp.MustCompile(`\b(sk|rk|pk)-[A-Za-z0-9_-]{16,}\b`), false, []string{"sk-", "rk-", "pk-"}},
	{regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`), false, []string{"xox"}},
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`), false, []string{"eyJ"}},
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), true, []string{"bearer", "basic"}},
}

// assignment matches NAME=value, --name=value and --name value where NAME
// says secret; group 1 (the name) is kept, the value masked.
var assignment = filtered{
	regexp.MustCompile(`(?i)((?:^|[\s"'])(?:--?)?[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|credential|private[_-]?key)[A-Za-z0-9_.-]*(?:=|:\s*|\s+))("[^"]*"|'[^']*'|[^\s"']+)`),
	true,
	[]string{"pass", "secret", "token", "apikey", "api_key", "api-key", "credential", "privatekey", "private_key", "private-key"},
}

// userinfo matches credentials in URLs; group 1 is kept.
var userinfo = filtered{regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`), false, nil}

// filtered is a masking regexp with a prefilter: the regexp can match only
// text that contains one of anyOf (all matches of userinfo contain both
// "://" and "@"). Running the regexps is what masking costs (a 4 KB Write
// spent over a millisecond in them); the literals rule most text out in
// microseconds. Every literal is a run of consecutive literal characters
// of every possible match, derived from the regexp by hand; the tests
// compare against the unfiltered regexps. For a (?i) regexp the literal
// is lower case and is looked for in the folded text (see foldText).
type filtered struct {
	re     *regexp.Regexp
	folded bool
	anyOf  []string
}

// maybe reports whether f.re can match s; folded is foldText(s), computed
// on first use.
func (f filtered) maybe(s string, folded *string, haveFolded *bool) bool {
	if f.anyOf == nil { // userinfo
		return strings.Contains(s, "://") && strings.Contains(s, "@")
	}
	t := s
	if f.folded {
		if !*haveFolded {
			*folded, *haveFolded = foldText(s), true
		}
		t = *folded
	}
	for _, lit := range f.anyOf {
		if strings.Contains(t, lit) {
			return true
		}
	}
	return false
}

// asciiFolds maps the non-ASCII runes that (?i) matches against an ASCII
// letter to that letter in lower case: Go's regexp folds case with
// unicode.SimpleFold's orbits, which join 'k' with the Kelvin sign U+212A
// and 's' with the long s U+017F.
var asciiFolds = func() map[rune]rune {
	m := map[rune]rune{}
	for c := 'a'; c <= 'z'; c++ {
		for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
			if r >= utf8.RuneSelf {
				m[r] = c
			}
		}
	}
	return m
}()

// foldText maps every rune of s that (?i) could match against an ASCII
// letter to that letter in lower case and keeps every other rune (invalid
// UTF-8 becomes U+FFFD, which folds with no ASCII letter). A (?i) match of
// a lower-case ASCII literal in s is thus a plain match in foldText(s).
func foldText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(func(r rune) rune {
				if 'A' <= r && r <= 'Z' {
					return r + 'a' - 'A'
				}
				if a, ok := asciiFolds[r]; ok {
					return a
				}
				return r
			}, s)
		}
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Mask is the replacement text.
const Mask = "***"

// MaxString bounds each string value kept in the log.
const MaxString = 2000

// maskWindow bounds how much of a long string is masked: only the first
// MaxString bytes of the result are kept, so masking megabytes beyond
// them (a 20 MB Write's content) would only cost time. The window is far
// larger than MaxString so that a secret masked near the start cannot
// pull unmasked text into the kept part; a private key cut by the window
// is masked to its end.
const maskWindow = 64 << 10

// window cuts s to maskWindow bytes (at a UTF-8 boundary) and says how
// many it cut off.
func window(s string) (string, int) {
	if len(s) <= maskWindow {
		return s, 0
	}
	cut := maskWindow
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut], len(s) - cut
}

// MaskString masks secret-looking parts of s and shortens it.
func MaskString(s string) string {
	s, omittedBeyond := window(s)
	// Each regexp runs only when its literal is in the text as it is
	// now: a replacement invalidates the folded copy.
	var folded string
	haveFolded := false
	replace := func(f filtered, repl string) {
		if !f.maybe(s, &folded, &haveFolded) {
			return
		}
		if r := f.re.ReplaceAllString(s, repl); r != s {
			s, haveFolded = r, false
		}
	}
	for _, f := range secretValues {
		replace(f, Mask)
	}
	replace(assignment, "${1}"+Mask)
	replace(userinfo, "${1}"+Mask+"@")
	if len(s) > MaxString || omittedBeyond > 0 {
		cut := min(MaxString, len(s))
		for cut > 0 && cut < len(s) && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…[" + itoa(len(s)-cut+omittedBeyond) + " bytes omitted]"
	}
	return s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// MaskInput returns the JSON input with secret values masked and long
// strings shortened. Input that is not JSON is masked as one string.
func MaskInput(input []byte) json.RawMessage {
	input = bytes.TrimSpace(input)
	if len(input) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		b, _ := json.Marshal(MaskString(string(input)))
		return b
	}
	out, err := json.Marshal(maskValue(v))
	if err != nil {
		return nil
	}
	return out
}

func maskValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) && !strings.EqualFold(k, "author") {
				if _, isStr := e.(string); isStr || e == nil {
					x[k] = Mask
					continue
				}
			}
			x[k] = maskValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskValue(e)
		}
		return x
	case string:
		return MaskString(x)
	}
	return v
}
