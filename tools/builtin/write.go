package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/agentbox/agentbox/tools"
)

const (
	maxEditBytes  = 16 << 20 // files larger than this are not edited
	maxDiffBytes  = 12 << 10 // diffs in results are cut beyond this
	defaultMode   = 0o644    // mode of new files
	maxWriteBytes = 64 << 20 // content larger than this is refused
)

// WriteParams are the parameters of Write.
type WriteParams struct {
	FilePath string `json:"file_path" jsonschema:"The absolute path to the file to write (must be absolute, not relative)" agentbox:"path"`
	Content  string `json:"content" jsonschema:"The content to write to the file"`
}

var writeDescription = tools.Description{
	Summary: "Writes a file in the workspace, creating it or replacing its whole content.",
	Long:    `The write happens in a throwaway sandbox container after agentbox has saved the file's previous content, so every write can be undone. An existing file keeps its permissions; a new file gets mode 0644 and any missing parent directories are created. The result shows a unified diff of the change.`,
	Usage: `Prefer Edit or MultiEdit to change part of an existing file: they send only the change.
Use Write for new files or for rewriting a file completely.
Do not create documentation or README files unless asked to.`,
	Rules: []string{
		"If the file exists, you must have read it with Read in this session, and it must not have changed since, or the write is refused.",
		"file_path must be inside the workspace.",
	},
	Examples: []string{`{"file_path": "/work/project/hello.txt", "content": "hello\n"}`},
}

// Write is the Write tool.
var Write = tools.New("Write", runWrite,
	tools.WithKind(tools.KindEdit), tools.TracksReads(tools.TrackWrite), tools.WritesOnlyFiles(),
	tools.WithDescription(writeDescription))

func runWrite(ctx context.Context, env *tools.Env, p *WriteParams) (tools.Result, error) {
	if len(p.Content) > maxWriteBytes {
		return tools.Fail(tools.ErrValidation, "content is %s; Write accepts at most %s", humanBytes(int64(len(p.Content))), humanBytes(maxWriteBytes)), nil
	}
	cur, err := loadForWrite(env, p.FilePath, true)
	if err != nil {
		return tools.Result{}, err
	}
	mode := fs.FileMode(defaultMode)
	if cur.exists {
		mode = cur.mode
	}
	if err := env.WriteFile(ctx, p.FilePath, []byte(p.Content), mode); err != nil {
		return tools.Result{}, err
	}
	lines := strings.Count(p.Content, "\n")
	if p.Content != "" && !strings.HasSuffix(p.Content, "\n") {
		lines++
	}
	var r tools.Result
	if cur.exists {
		r.Content = fmt.Sprintf("Updated %s (%d %s).", p.FilePath, lines, plural(lines, "line", "lines"))
		if d := diffText(p.FilePath, cur.content, p.Content, cur.tooBig); d != "" {
			r.Content += "\n\n" + d
		}
		r.Display = fmt.Sprintf("updated %s", p.FilePath)
	} else {
		r.Content = fmt.Sprintf("Created %s (%d %s).", p.FilePath, lines, plural(lines, "line", "lines"))
		r.Display = fmt.Sprintf("created %s", p.FilePath)
	}
	r.SetMeta("lines", lines)
	r.SetMeta("created", !cur.exists)
	return r, nil
}

// current is a target file as it is before a write.
type current struct {
	exists  bool
	content string
	mode    fs.FileMode
	tooBig  bool // content not loaded (Write only)
}

// loadForWrite checks the target of a write and loads its content. The
// path must be in the workspace (not a read-only dir) and, if it exists,
// be a regular file (not a directory, symlink, device or FIFO). forWrite
// tolerates files too big to diff.
func loadForWrite(env *tools.Env, path string, forWrite bool) (current, error) {
	rel, err := env.Rel(path)
	if err != nil {
		return current{}, err
	}
	if rel == "." {
		return current{}, tools.Errorf(tools.ErrValidation, "%s is the workspace directory, not a file", path)
	}
	fi, err := env.Root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return current{}, nil
	case err != nil:
		return current{}, failureToToolError(statFailure(err, path))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := env.Root.Readlink(rel)
		return current{}, tools.Errorf(tools.ErrValidation, "%s is a symbolic link (to %s); edit the file it points to instead, by its own path", path, target)
	}
	if err := checkRegular(fi, path); err != nil {
		return current{}, failureToToolError(err)
	}
	cur := current{exists: true, mode: fi.Mode().Perm()}
	if fi.Size() > maxEditBytes {
		if forWrite {
			cur.tooBig = true
			return cur, nil
		}
		return current{}, tools.Errorf(tools.ErrValidation, "%s is %s, too large to edit (the limit is %s); use Bash with a tool such as sed", path, humanBytes(fi.Size()), humanBytes(maxEditBytes))
	}
	f, _, err := openRegular(env.Root, rel, path)
	if err != nil {
		return current{}, failureToToolError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return current{}, tools.Errorf(tools.ErrExecution, "cannot read %s", path)
	}
	if !forWrite && isBinary(data[:min(len(data), sniffBytes)]) {
		return current{}, tools.Errorf(tools.ErrValidation, "%s is a binary file; Edit changes text files only", path)
	}
	cur.content = string(data)
	return cur, nil
}

// failureToToolError maps a readFailure to a ToolError.
func failureToToolError(err error) error {
	var rf *readFailure
	if errors.As(err, &rf) {
		if rf.notFound {
			return tools.Errorf(tools.ErrNotFound, "%s", rf.msg)
		}
		return tools.Errorf(tools.ErrValidation, "%s", rf.msg)
	}
	return err
}

// diffText is a unified diff between old and new for the model, with CRs
// dropped and the size capped.
func diffText(path, old, new string, unknownOld bool) string {
	if unknownOld {
		return "(The previous content was too large to diff.)"
	}
	old = strings.ReplaceAll(old, "\r\n", "\n")
	new = strings.ReplaceAll(new, "\r\n", "\n")
	d := udiff.Unified(path, path, old, new)
	if d == "" {
		return "(No change in content.)"
	}
	if len(d) > maxDiffBytes {
		cut := strings.LastIndexByte(d[:maxDiffBytes], '\n')
		if cut < 0 {
			cut = maxDiffBytes
		}
		d = d[:cut+1] + fmt.Sprintf("[diff cut: %s more]\n", humanBytes(int64(len(d)-cut-1)))
	}
	return strings.TrimRight(d, "\n")
}
