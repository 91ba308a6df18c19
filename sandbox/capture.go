package sandbox

import (
	"fmt"
)

// Capture keeps the head and the tail of a byte stream within a cap and
// counts what it drops in between. The zero value keeps nothing; use
// [NewCapture]. Not safe for concurrent use.
type Capture struct {
	cap     int
	head    []byte
	tail    []byte // ring buffer of the last cap-len(head) bytes
	start   int    // index of the oldest byte in tail when full
	total   int64
	tailCap int
}

// NewCapture returns a [Capture] keeping at most limit bytes: the first half
// as written and the most recent half.
func NewCapture(limit int) *Capture {
	if limit < 0 {
		limit = 0
	}
	return &Capture{cap: limit, tailCap: limit - limit/2}
}

// Write never fails.
func (c *Capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.cap/2 - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailCap == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		c.start = 0
		return n, nil
	}
	if len(c.tail) < c.tailCap {
		k := min(c.tailCap-len(c.tail), len(p))
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 { // ring full: overwrite the oldest bytes
		k := copy(c.tail[c.start:], p)
		p = p[k:]
		c.start = (c.start + k) % c.tailCap
	}
	return n, nil
}

// Total is the number of bytes written.
func (c *Capture) Total() int64 { return c.total }

// Dropped is the number of bytes not kept.
func (c *Capture) Dropped() int64 { return c.total - int64(len(c.head)+len(c.tail)) }

// Bytes returns the kept bytes. When bytes were dropped, a marker line
// saying how many, "[... N bytes omitted ...]", separates head from tail:
// it is the note of the cut (callers add none of their own, and may
// recognise the line by its form to keep it through a filter).
func (c *Capture) Bytes() []byte {
	out := make([]byte, 0, len(c.head)+len(c.tail)+64)
	out = append(out, c.head...)
	if d := c.Dropped(); d > 0 {
		out = append(out, fmt.Sprintf("\n[... %d bytes omitted ...]\n", d)...)
	}
	out = append(out, c.tail[c.start:]...)
	out = append(out, c.tail[:c.start]...)
	return out
}
