package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/tools/termtext"
)

// ANSI escapes used to colour unified diffs for people. Model-facing text
// never goes through here: colour is added only at the CLI layer.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// useColor decides whether output to w gets colour. mode is the --color
// flag: "always", "never" or "auto" (colour only when w is a terminal and
// NO_COLOR is unset). JSON output is never coloured.
func useColor(mode string, w io.Writer, jsonOut bool, getenv func(string) string) (bool, error) {
	switch mode {
	case "always":
		return !jsonOut, nil
	case "never":
		return false, nil
	case "auto", "":
		if jsonOut || getenv("NO_COLOR") != "" {
			return false, nil
		}
		f, ok := w.(*os.File)
		return ok && isTerminal(f), nil
	}
	return false, fmt.Errorf("--color: %q is not one of auto, always, never", mode)
}

// diffColorizer colours a unified diff written to it line by line: header
// lines (diff, ---, +++, mode and binary notes) bold, hunk headers cyan,
// added lines green, removed lines red, context plain. Partial lines are
// held until their newline arrives or Close is called. Inside a hunk the
// line counts from its @@ header decide what a line is, so a removed line
// reading "-- x" (shown as "--- x") is red, not a header.
type diffColorizer struct {
	w   io.Writer
	buf []byte
	// old and new are the lines still expected in the current hunk; -1
	// means the hunk header had no counts, so lines are judged by prefix
	// until the next "diff " line.
	old, new int
	inHunk   bool
	out      bytes.Buffer
}

func newDiffColorizer(w io.Writer) *diffColorizer { return &diffColorizer{w: w} }

// Write colours every complete line in p and keeps the rest for later.
func (c *diffColorizer) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	c.out.Reset()
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			break
		}
		c.line(c.buf[:i], true)
		c.buf = c.buf[i+1:]
	}
	if len(c.buf) == 0 {
		c.buf = nil
	}
	if c.out.Len() > 0 {
		if _, err := c.w.Write(c.out.Bytes()); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes a final line that had no newline.
func (c *diffColorizer) Close() error {
	if len(c.buf) == 0 {
		return nil
	}
	c.out.Reset()
	c.line(c.buf, false)
	c.buf = nil
	_, err := c.w.Write(c.out.Bytes())
	return err
}

func (c *diffColorizer) line(l []byte, nl bool) {
	colour := c.classify(string(l))
	if colour != "" && len(l) > 0 {
		c.out.WriteString(colour)
		c.out.Write(l)
		c.out.WriteString(ansiReset)
	} else {
		c.out.Write(l)
	}
	if nl {
		c.out.WriteByte('\n')
	}
}

// classify returns the colour of one line and advances the hunk state.
func (c *diffColorizer) classify(s string) string {
	if c.inHunk && c.old == -1 && strings.HasPrefix(s, "diff ") {
		c.inHunk = false
	}
	if c.inHunk && (c.old == -1 || c.old > 0 || c.new > 0) {
		switch {
		case strings.HasPrefix(s, "@@"):
			// A new hunk header: fall through to the header handling.
		case strings.HasPrefix(s, `\`): // "\ No newline at end of file"
			return ""
		case strings.HasPrefix(s, "+"):
			if c.old == -1 {
				if strings.HasPrefix(s, "+++ ") {
					return ansiBold
				}
				return ansiGreen
			}
			c.new--
			return ansiGreen
		case strings.HasPrefix(s, "-"):
			if c.old == -1 {
				if strings.HasPrefix(s, "--- ") {
					return ansiBold
				}
				return ansiRed
			}
			c.old--
			return ansiRed
		default:
			if c.old != -1 {
				c.old--
				c.new--
			}
			return ""
		}
	}
	if strings.HasPrefix(s, "@@") {
		c.inHunk = true
		c.old, c.new = hunkCounts(s)
		return ansiCyan
	}
	if s == "" {
		return ""
	}
	c.inHunk = false
	return ansiBold
}

// hunkCounts parses "@@ -a[,b] +c[,d] @@" into the old and new line
// counts, or -1, -1 when the header is not in that form.
func hunkCounts(s string) (int, int) {
	f := strings.Fields(s)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" {
		return -1, -1
	}
	o, ok1 := rangeCount(f[1], '-')
	n, ok2 := rangeCount(f[2], '+')
	if !ok1 || !ok2 {
		return -1, -1
	}
	return o, n
}

func rangeCount(r string, sign byte) (int, bool) {
	if len(r) < 2 || r[0] != sign {
		return 0, false
	}
	r = r[1:]
	_, count, found := strings.Cut(r, ",")
	if !found {
		_, err := strconv.Atoi(r)
		return 1, err == nil
	}
	n, err := strconv.Atoi(count)
	return n, err == nil && n >= 0
}

// escapeWriter passes text through termtext.Escape line by line before it
// reaches w, so that control bytes in a diff's content or headers show
// visibly instead of acting on the terminal. A line is held until its
// newline arrives (escaping needs whole UTF-8 sequences) or Close.
type escapeWriter struct {
	w   io.Writer
	buf []byte
}

func (e *escapeWriter) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	i := bytes.LastIndexByte(e.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(e.w, termtext.Escape(string(e.buf[:i+1]))); err != nil {
		return 0, err
	}
	e.buf = append(e.buf[:0], e.buf[i+1:]...)
	return len(p), nil
}

// Close writes a last line that had no newline.
func (e *escapeWriter) Close() error {
	if len(e.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(e.w, termtext.Escape(string(e.buf)))
	e.buf = nil
	return err
}
