package tools

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// Truncate caps Content at max bytes, keeping the head and the tail and
// saying in the middle how much was left out (Meta "truncated_bytes").
// When the cut takes away the note of an earlier cut (the sandbox's
// output cap, Meta "output_dropped_bytes"), its own note counts those
// bytes too: one note, the whole loss.
func Truncate(max int) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			res := next(ctx, c)
			if s, cut := truncateText(res.Content, max, earlierCut(res)); cut > 0 {
				res.Content = s
				res.SetMeta("truncated_bytes", cut)
			}
			return res
		}
	}
}

// earlierCut is how many bytes a cut before this stage left out (the
// sandbox's output cap), 0 when none.
func earlierCut(res Result) int64 {
	switch n := res.Meta["output_dropped_bytes"].(type) {
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}

// cutNote is how an earlier cut marks its place in the text, with its
// size (sandbox.Capture's "[... N bytes omitted ...]").
var cutNote = regexp.MustCompile(`\[\.\.\. ([0-9]+) bytes omitted \.\.\.\]`)

// cutInside is how many of the earlier cuts' bytes the notes in s count
// (Bash output has one note per stream the sandbox cut), at most earlier:
// the command's own output may hold text that looks like a note.
func cutInside(s string, earlier int64) int64 {
	var n int64
	for _, m := range cutNote.FindAllStringSubmatch(s, -1) {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || v > earlier-n {
			return earlier
		}
		n += v
	}
	return n
}

// truncateText keeps the first and last parts of s within max bytes
// (cutting at UTF-8 boundaries) and returns how many bytes it dropped.
// earlier is the size of the cuts made before; the new note counts those
// whose notes are in the dropped middle.
func truncateText(s string, max int, earlier int64) (string, int) {
	if max <= 0 || len(s) <= max {
		return s, 0
	}
	marker := func(n int, earlier int64) string {
		of := ""
		if earlier > 0 {
			n += int(earlier)
			of = fmt.Sprintf(" (%d of them by the sandbox's output cap)", earlier)
		}
		return fmt.Sprintf("\n\n[... %d bytes omitted%s; narrow the request (offset/limit, head_limit, a more specific pattern) to see them ...]\n\n", n, of)
	}
	budget := max - len(marker(len(s), earlier))
	if budget < 2 {
		budget = 2
	}
	head := budget / 2
	tail := budget - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	dropped := start - head
	if earlier > 0 {
		// A note still in the text keeps counting its own cut.
		earlier = cutInside(s[head:start], earlier)
	}
	return s[:head] + marker(dropped, earlier) + s[start:], dropped
}
