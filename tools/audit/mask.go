package audit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// secretKey matches object keys whose values are secrets.
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|auth(orization)?|credential|private[_-]?key|session[_-]?key|cookie)`)

// secretValue matches secret-looking text inside strings; group 1, when
// present, is kept (the name of the thing), the rest is masked.
var secretValues = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b`),
	regexp.MustCompile(`\b(sk|rk|pk)-[A-Za-z0-9_-]{16,}\b`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`),
	regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`),
}

// assignment matches NAME=value, --name=value and --name value where NAME
// says secret.
var assignment = regexp.MustCompile(`(?i)((?:^|[\s"'])(?:--?)?[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|credential|private[_-]?key)[A-Za-z0-9_.-]*(?:=|:\s*|\s+))("[^"]*"|'[^']*'|[^\s"']+)`)

// userinfo matches credentials in URLs.
var userinfo = regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`)

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

// MaskString masks secret-looking parts of s and shortens it.
func MaskString(s string) string {
	omittedBeyond := 0
	if len(s) > maskWindow {
		cut := maskWindow
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		omittedBeyond = len(s) - cut
		s = s[:cut]
	}
	for _, re := range secretValues {
		s = re.ReplaceAllString(s, Mask)
	}
	s = assignment.ReplaceAllString(s, "${1}"+Mask)
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
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
