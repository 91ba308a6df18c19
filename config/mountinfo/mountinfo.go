// Package mountinfo parses a mount table in the format of
// /proc/PID/mountinfo (proc(5)). It is the one parser of that format in
// agentbox: the container's init checks its mounts with it
// (sandbox/initproc), and change capture looks for mounts beneath the
// workspace with it (snapshot).
//
// It imports only the standard library, so that importing it keeps
// sandbox/initproc free of the rest of agentbox.
package mountinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrMalformed is returned by Parse for a line that does not have the
// fields of a mountinfo line.
var ErrMalformed = errors.New("malformed mountinfo line")

// Entry is one line of a mount table.
type Entry struct {
	Target  string   // mount point (field 5), unescaped
	Options []string // per-mount options (ro/rw, nosuid, …)
	FSType  string
	Source  string // mount source, unescaped
}

// Parse parses a mount table. Every line must have the optional-fields
// separator "-" followed by the filesystem type and the source;
// otherwise Parse returns an error wrapping ErrMalformed.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("%w %q", ErrMalformed, sc.Text())
		}
		out = append(out, Entry{
			Target:  Unescape(f[4]),
			Options: strings.Split(f[5], ","),
			FSType:  f[sep+1],
			Source:  Unescape(f[sep+2]),
		})
	}
	return out, sc.Err()
}

// Unescape undoes the octal escapes of a mountinfo field (\040 for a
// space, \011 for a tab, \012 for a newline, \134 for a backslash).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
