package pathspec

import "strings"

// UnescapeWord drops the backslashes of an unquoted shell literal
// (`a\ b` is `a b`): the path a shell word names once the shell has
// removed its escapes, as rules and the host-run closure judge it.
func UnescapeWord(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
