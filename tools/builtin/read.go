package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"

	"github.com/agentbox/agentbox/tools"
)

// ReadParams are the parameters of Read.
type ReadParams struct {
	FilePath string `json:"file_path" jsonschema:"The absolute path to the file to read" agentbox:"path"`
	Offset   int    `json:"offset,omitempty" jsonschema:"The line number to start reading from (1-based). Only provide if the file is too large to read at once" minimum:"0"`
	Limit    int    `json:"limit,omitempty" jsonschema:"The number of lines to read. Only provide if the file is too large to read at once" minimum:"0"`
}

var readDescription = tools.Description{
	Summary: "Reads a file from the workspace (or a configured read-only directory).",
	Long: `Returns the file's lines numbered like cat -n: the line number right-aligned, a tab, then the line. By default it reads up to 2000 lines from the start of the file; offset and limit select another window, which is useful for long files. Lines longer than 2000 characters are cut and marked.

PNG, JPEG, GIF and WebP images are returned as images for you to look at. Binary files, directories, devices and FIFOs are refused with a message saying what they are.`,
	Usage: `file_path must be an absolute path; a relative path is resolved against the session's working directory.
Read a whole file unless it is very long; then read it in windows with offset and limit.
Reading a file that has not changed since you last read the same window returns a short note instead of the content again.
Several files can be read in parallel by calling Read several times in one batch.
To list a directory use LS; to find files use Glob; to search contents use Grep.`,
	Rules: []string{
		"Read a file before you Edit or Write it: editing a file you have not read, or that changed since you read it, is refused.",
		"Never include the line-number prefix (number and tab) in old_string or new_string when you edit afterwards.",
	},
	Examples: []string{
		`{"file_path": "/work/project/main.go"}`,
		`{"file_path": "/work/project/big.log", "offset": 4001, "limit": 500}`,
	},
}

// Read is the Read tool.
var Read = tools.New("Read", runRead,
	tools.WithKind(tools.KindRead), tools.ReadOnly(), tools.ConcurrencySafe(),
	tools.TracksReads(tools.TrackRead), tools.WithDescription(readDescription))

func runRead(ctx context.Context, env *tools.Env, p *ReadParams) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	root, rel, err := env.RootFor(p.FilePath)
	if err != nil {
		return tools.Result{}, err
	}
	f, fi, err := openRegular(root, rel, p.FilePath)
	if err != nil {
		return readFail(err), nil
	}
	defer f.Close()
	h := sha256.New()
	fc, err := readContent(hashingFile{f, h}, fi, p.FilePath, p.Offset, p.Limit)
	if err != nil {
		return readFail(err), nil
	}
	stamp := tools.ReadStamp{ModTime: fi.ModTime(), Size: fi.Size(), Offset: max(p.Offset, 1), Limit: effectiveLimit(p.Limit), Shown: true}
	if fi.Size() <= maxCountBytes && (fc.total >= 0 || fc.image != nil || fc.empty) {
		stamp.Hash = hex.EncodeToString(h.Sum(nil))
	}
	if env.Now != nil {
		stamp.At = env.Now()
	}
	if env.Session != nil {
		if last, ok := env.Session.LastRead(p.FilePath); ok && unchangedRead(last, stamp) {
			env.Session.RecordRead(p.FilePath, stamp)
			r := tools.Result{
				Content: fmt.Sprintf("File unchanged since your last read of this window (lines %d-%d) of %s; its content is as you saw it then, so it is not repeated.", stamp.Offset, stamp.Offset+max(fc.shown, 1)-1, tools.EncodeName(p.FilePath)),
				Display: "unchanged since last read",
			}
			r.SetMeta("unchanged", true)
			return r, nil
		}
		env.Session.RecordRead(p.FilePath, stamp)
	}
	return readResult(tools.EncodeName(p.FilePath), fc), nil
}

// effectiveLimit is the line limit a Read applies.
func effectiveLimit(limit int) int {
	if limit <= 0 {
		return defaultReadLines
	}
	return limit
}

// unchangedRead reports whether a new read repeats an earlier Read of the
// same window of the same content. Stamps recorded after a write have no
// Limit and never count: the model has not seen that content whole; nor do
// stamps of another process (not Shown): a one-shot CLI call has no
// conversation in which the content was seen.
func unchangedRead(last, cur tools.ReadStamp) bool {
	return last.Shown && last.Limit != 0 && last.Limit == cur.Limit && last.Offset == cur.Offset &&
		last.Hash != "" && cur.Hash != "" && last.Same(cur)
}

// readResult renders what Read found for the model.
func readResult(display string, fc fileContent) tools.Result {
	var r tools.Result
	switch {
	case fc.image != nil:
		r.Content = fmt.Sprintf("Image %s (%s, %s).", display, fc.mime, humanBytes(int64(len(fc.image))))
		r.Images = []tools.Image{{MIMEType: fc.mime, Data: fc.image}}
		r.Display = "image " + fc.mime
		r.SetMeta("mime_type", fc.mime)
		return r
	case fc.empty:
		r.Content = fmt.Sprintf("The file %s exists but is empty.", display)
		r.Display = "empty file"
		r.SetMeta("total_lines", 0)
		return r
	}
	var b strings.Builder
	b.WriteString(fc.text)
	last := fc.first + fc.shown - 1
	var notes []string
	if fc.cutLines > 0 {
		notes = append(notes, fmt.Sprintf("%d %s longer than %d characters %s cut.", fc.cutLines, plural(fc.cutLines, "line", "lines"), maxLineChars, plural(fc.cutLines, "was", "were")))
	}
	if fc.truncated {
		notes = append(notes, fmt.Sprintf("Output stopped after %s.", humanBytes(maxReadOutput)))
	}
	if fc.more || fc.first > 1 {
		if fc.total >= 0 {
			notes = append(notes, fmt.Sprintf("Showing lines %d-%d of %d.", fc.first, last, fc.total))
		} else {
			notes = append(notes, fmt.Sprintf("Showing lines %d-%d; the file has more.", fc.first, last))
		}
		if fc.more {
			notes = append(notes, fmt.Sprintf("Use offset=%d to read on.", last+1))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n[" + strings.Join(notes, " ") + "]\n")
	}
	r.Content = b.String()
	r.Display = fmt.Sprintf("read %d %s", fc.shown, plural(fc.shown, "line", "lines"))
	r.SetMeta("lines_shown", fc.shown)
	if fc.total >= 0 {
		r.SetMeta("total_lines", fc.total)
	}
	return r
}

// readFail turns a read failure into a failed Result.
func readFail(err error) tools.Result {
	var rf *readFailure
	if errors.As(err, &rf) {
		if rf.notFound {
			return tools.Fail(tools.ErrNotFound, "%s", rf.msg)
		}
		return tools.Fail(tools.ErrValidation, "%s", rf.msg)
	}
	return tools.Fail(tools.ErrExecution, "the file could not be read")
}

// hashingFile hashes everything read from the file.
type hashingFile struct {
	*os.File
	h hash.Hash
}

func (f hashingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.h.Write(p[:n])
	return n, err
}
