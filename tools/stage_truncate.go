package tools

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// Truncate caps Content at max bytes, keeping the head and the tail and
// saying in the middle how much was left out (Meta "truncated_bytes").
func Truncate(max int) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) Result {
			res := next(ctx, c)
			if s, cut := truncateText(res.Content, max); cut > 0 {
				res.Content = s
				res.SetMeta("truncated_bytes", cut)
			}
			return res
		}
	}
}

// truncateText keeps the first and last parts of s within max bytes
// (cutting at UTF-8 boundaries) and returns how many bytes it dropped.
func truncateText(s string, max int) (string, int) {
	if max <= 0 || len(s) <= max {
		return s, 0
	}
	marker := func(n int) string {
		return fmt.Sprintf("\n\n[... %d bytes omitted; narrow the request (offset/limit, head_limit, a more specific pattern) to see them ...]\n\n", n)
	}
	budget := max - len(marker(len(s)))
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
	return s[:head] + marker(dropped) + s[start:], dropped
}
