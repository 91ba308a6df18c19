package builtin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
	"unsafe"
)

// Limits of Read.
const (
	defaultReadLines = 2000      // lines shown when no limit is given
	maxLineChars     = 2000      // longer lines are cut
	maxReadOutput    = 256 << 10 // bytes of numbered text per call
	maxImageBytes    = 5 << 20   // larger images are refused
	maxCountBytes    = 64 << 20  // beyond this the total line count is not computed
	sniffBytes       = 8 << 10   // bytes looked at to tell text from binary
)

// readFailure is a Read that cannot be done, with text for the model.
type readFailure struct {
	notFound bool
	msg      string
}

func (e *readFailure) Error() string { return e.msg }

// fileContent is what Read found.
type fileContent struct {
	text      string // numbered lines (text files)
	image     []byte // raw image bytes (image files)
	mime      string // image MIME type
	empty     bool
	first     int  // first line shown (1-based)
	shown     int  // lines shown
	total     int  // total lines, or -1 when not counted
	cutLines  int  // lines whose tail was cut
	truncated bool // stopped early because of maxReadOutput
	more      bool // lines follow the ones shown
	info      fs.FileInfo
}

// openRegular opens name in root for reading, refusing directories, devices,
// FIFOs and sockets without ever blocking on them: the type is checked before
// opening, the open is non-blocking, and the type is checked again on the
// open file.
func openRegular(root *os.Root, name, display string) (*os.File, fs.FileInfo, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, nil, statFailure(err, display)
	}
	if err := checkRegular(fi, display); err != nil {
		return nil, nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, statFailure(err, display)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, statFailure(err, display)
	}
	if err := checkRegular(fi, display); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func checkRegular(fi fs.FileInfo, display string) error {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return &readFailure{msg: fmt.Sprintf("%s is a directory, not a file. Use LS to list it or Glob to find files in it.", display)}
	case m&fs.ModeNamedPipe != 0:
		return &readFailure{msg: fmt.Sprintf("%s is a FIFO (named pipe); it was not opened because reading it could block forever.", display)}
	case m&fs.ModeSocket != 0:
		return &readFailure{msg: fmt.Sprintf("%s is a socket, not a file.", display)}
	case m&fs.ModeDevice != 0:
		return &readFailure{msg: fmt.Sprintf("%s is a device, not a file; devices are never read.", display)}
	}
	return &readFailure{msg: fmt.Sprintf("%s is not a regular file.", display)}
}

// statFailure turns a stat/open error into text for the model.
func statFailure(err error, display string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &readFailure{notFound: true, msg: fmt.Sprintf("File does not exist: %s", display)}
	case errors.Is(err, fs.ErrPermission):
		return &readFailure{msg: fmt.Sprintf("Permission denied reading %s.", display)}
	case isEscape(err):
		return &readFailure{msg: fmt.Sprintf("%s resolves outside the directories this tool may read (a symlink or '..' leads out of them); it was not read.", display)}
	case errors.Is(err, syscall.ENOTDIR):
		return &readFailure{notFound: true, msg: fmt.Sprintf("File does not exist: %s (a parent is not a directory)", display)}
	case errors.Is(err, syscall.ELOOP):
		return &readFailure{msg: fmt.Sprintf("%s: too many levels of symbolic links.", display)}
	}
	return &readFailure{msg: fmt.Sprintf("Cannot read %s.", display)}
}

// isEscape reports whether err is os.Root refusing a path that leaves it.
func isEscape(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent") {
		return true
	}
	return strings.Contains(err.Error(), "path escapes from parent")
}

// readContent reads an open regular file: images as bytes, text as
// numbered lines starting at line offset (1-based) for at most limit lines.
func readContent(f io.Reader, fi fs.FileInfo, display string, offset, limit int) (fileContent, error) {
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = defaultReadLines
	}
	fc := fileContent{info: fi, first: offset, total: -1}
	if fi.Size() == 0 {
		fc.empty, fc.total = true, 0
		return fc, nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if mime := imageType(head); mime != "" {
		if fi.Size() > maxImageBytes {
			return fc, &readFailure{msg: fmt.Sprintf("%s is an image of %s, larger than the %s that Read returns.", display, humanBytes(fi.Size()), humanBytes(maxImageBytes))}
		}
		data, err := io.ReadAll(io.LimitReader(br, maxImageBytes+1))
		if err != nil {
			return fc, &readFailure{msg: fmt.Sprintf("Cannot read %s.", display)}
		}
		fc.image, fc.mime = data, mime
		return fc, nil
	}
	if isBinary(head) {
		return fc, &readFailure{msg: fmt.Sprintf("%s is a binary file (%s); Read shows text and images only. Use Bash with a tool such as xxd, od or file to inspect it.", display, humanBytes(fi.Size()))}
	}
	var b strings.Builder
	b.Grow(int(min(fi.Size()+fi.Size()/4, maxReadOutput+maxReadOutput/4)))
	line := 0
	countAll := fi.Size() <= maxCountBytes
	for {
		raw, err := br.ReadSlice('\n')
		long := false
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep its start, skip the rest.
			long = true
			start := append([]byte(nil), raw...)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			raw = start
		}
		if len(raw) == 0 && err != nil {
			break
		}
		line++
		if line >= offset && fc.shown < limit && !fc.truncated {
			text := unsafeString(bytes.TrimRight(raw, "\r\n"))
			if writeNumbered(&b, line, text, maxLineChars) || long {
				fc.cutLines++
			}
			fc.shown++
			if b.Len() > maxReadOutput {
				fc.truncated = true
			}
		} else if line >= offset {
			fc.more = true
			if !countAll {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if countAll || !fc.more {
		fc.total = line
	}
	if offset > 1 && fc.shown == 0 {
		return fc, &readFailure{msg: fmt.Sprintf("%s has %d lines; offset %d is past the end. Use an offset from 1 to %d.", display, line, offset, max(line, 1))}
	}
	fc.text = b.String()
	return fc, nil
}

// writeNumbered writes one line in `cat -n` form (number right-aligned in 6
// columns, a tab, the text), cutting text to max characters. It reports
// whether the line was cut.
func writeNumbered(b *strings.Builder, n int, text string, maxChars int) bool {
	cut := false
	if len(text) > maxChars && utf8.RuneCountInString(text) > maxChars {
		r := 0
		for i := range text {
			if r == maxChars {
				text = text[:i]
				break
			}
			r++
		}
		cut = true
	}
	var num [20]byte
	d := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(d); i < 6; i++ {
		b.WriteByte(' ')
	}
	b.Write(d)
	b.WriteByte('\t')
	b.WriteString(text)
	if cut {
		b.WriteString(" … [line cut]")
	}
	b.WriteByte('\n')
	return cut
}

// imageType returns the MIME type of an image Read returns as image content,
// detected from its bytes, or "".
func imageType(head []byte) string {
	switch ct := http.DetectContentType(head); ct {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return ct
	}
	return ""
}

// isBinary reports whether head looks like the start of a binary file: it
// has a NUL byte, or it is not UTF-8 and many of its bytes are control
// characters.
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if utf8.Valid(trimPartialRune(head)) {
		return false
	}
	ctrl := 0
	for _, c := range head {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b {
			ctrl++
		}
	}
	return ctrl*10 > len(head)
}

// trimPartialRune drops an incomplete UTF-8 sequence cut at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// unsafeString views b as a string without copying; the string must not
// outlive the next change of b (writeNumbered copies it into the output).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
