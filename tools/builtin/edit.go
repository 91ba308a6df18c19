package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/tools"
)

// EditParams are the parameters of Edit.
type EditParams struct {
	FilePath   string `json:"file_path" jsonschema:"The absolute path to the file to modify" agentbox:"path"`
	OldString  string `json:"old_string" jsonschema:"The text to replace"`
	NewString  string `json:"new_string" jsonschema:"The text to replace it with (must be different from old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace all occurrences of old_string (default false)"`
}

// Validate implements the pipeline's pure validation.
func (p *EditParams) Validate() error {
	if p.OldString == p.NewString {
		return tools.Errorf(tools.ErrValidation, "No changes to make: old_string and new_string are exactly the same.")
	}
	return nil
}

// EditOp is one edit of a MultiEdit call.
type EditOp struct {
	OldString  string `json:"old_string" jsonschema:"The text to replace"`
	NewString  string `json:"new_string" jsonschema:"The text to replace it with"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace all occurrences of old_string (default false)"`
}

// MultiEditParams are the parameters of MultiEdit.
type MultiEditParams struct {
	FilePath string   `json:"file_path" jsonschema:"The absolute path to the file to modify" agentbox:"path"`
	Edits    []EditOp `json:"edits" jsonschema:"Edits to apply in order; each one sees the result of the ones before it"`
}

// Validate implements the pipeline's pure validation.
func (p *MultiEditParams) Validate() error {
	if len(p.Edits) == 0 {
		return tools.Errorf(tools.ErrValidation, "edits is empty: give at least one edit")
	}
	for i, e := range p.Edits {
		if e.OldString == e.NewString {
			return tools.Errorf(tools.ErrValidation, "edit %d: old_string and new_string are exactly the same", i+1)
		}
	}
	return nil
}

var editDescription = tools.Description{
	Summary: "Replaces exact text in a file in the workspace.",
	Long: `Finds old_string in the file and replaces it with new_string. old_string must match exactly one place unless replace_all is true. The new content is computed here and written by a throwaway sandbox container after the old content was saved, so the edit can be undone; the file keeps its permissions and its line endings (in a CRLF file, plain newlines in old_string and new_string count as CRLF). The result shows a unified diff.

When old_string is not found exactly but matches exactly one place once whitespace (indentation, runs of spaces, trailing blanks) is ignored, that place is replaced and the result says so. When it matches nowhere, the result shows the closest lines of the file.`,
	Usage: `Copy old_string from Read's output without the line-number prefix (everything after the tab), keeping indentation exactly.
Include enough surrounding lines to make old_string unique, or set replace_all to rename something everywhere.
An empty old_string creates a new file with new_string as its content.
Use MultiEdit for several changes to one file.
A byte that is not UTF-8 shows as U+FFFD in Read's output: copy it as it is; each U+FFFD kept in new_string keeps the file's byte.`,
	Rules: []string{
		"You must Read the file in this session before editing it, and it must not have changed since, or the edit is refused.",
		"old_string and new_string must differ.",
	},
	Examples: []string{
		`{"file_path": "/work/project/main.go", "old_string": "fmt.Println(\"hi\")", "new_string": "fmt.Println(\"hello\")"}`,
		`{"file_path": "/work/project/main.go", "old_string": "oldName", "new_string": "newName", "replace_all": true}`,
	},
}

var multiEditDescription = tools.Description{
	Summary: "Makes several replacements in one file at once, all or nothing.",
	Long:    `Applies edits in order, each like one Edit call on the result of the ones before. If any edit fails (text not found, ambiguous, identical strings) none is applied and the file is left untouched. The whole change is written once, by a throwaway sandbox container after the old content was saved, so it can be undone as one step. The result shows a unified diff.`,
	Usage: `Plan the edits so that an earlier one does not change the text a later one looks for.
Each old_string must match exactly one place unless that edit's replace_all is true.
To create a file, make the first edit's old_string empty.`,
	Rules: []string{
		"You must Read the file in this session before editing it, and it must not have changed since, or the edit is refused.",
	},
	Examples: []string{
		`{"file_path": "/work/project/a.py", "edits": [{"old_string": "import os", "new_string": "import os\nimport sys"}, {"old_string": "def f():", "new_string": "def g():"}]}`,
	},
}

// Edit is the Edit tool.
var Edit = tools.New("Edit", runEdit,
	tools.WithKind(tools.KindEdit), tools.TracksReads(tools.TrackWrite), tools.WritesOnlyFiles(),
	tools.WithDescription(editDescription))

// MultiEdit is the MultiEdit tool.
var MultiEdit = tools.New("MultiEdit", runMultiEdit,
	tools.WithKind(tools.KindEdit), tools.TracksReads(tools.TrackWrite), tools.WritesOnlyFiles(),
	tools.WithDescription(multiEditDescription))

func runEdit(ctx context.Context, env *tools.Env, p *EditParams) (tools.Result, error) {
	return editFile(ctx, env, p.FilePath, []editSpec{{p.OldString, p.NewString, p.ReplaceAll}})
}

func runMultiEdit(ctx context.Context, env *tools.Env, p *MultiEditParams) (tools.Result, error) {
	specs := make([]editSpec, len(p.Edits))
	for i, e := range p.Edits {
		specs[i] = editSpec{e.OldString, e.NewString, e.ReplaceAll}
	}
	return editFile(ctx, env, p.FilePath, specs)
}

// editFile applies edits to path in memory and writes the result through
// the sandbox, or changes nothing.
func editFile(ctx context.Context, env *tools.Env, path string, edits []editSpec) (tools.Result, error) {
	cur, err := loadForWrite(env, path, false)
	if err != nil {
		return tools.Result{}, err
	}
	if !cur.exists && (len(edits) == 0 || edits[0].Old != "") {
		return tools.Fail(tools.ErrNotFound, "File does not exist: %s. To create it, use Write, or an edit whose old_string is empty.", path), nil
	}
	content, outs, err := applyEdits(cur.content, edits)
	if err != nil {
		return editFail(err), nil
	}
	mode := cur.mode
	if !cur.exists {
		mode = defaultMode
	}
	if err := env.WriteFile(ctx, path, []byte(content), mode); err != nil {
		return tools.Result{}, err
	}
	var b strings.Builder
	total, fuzzy := 0, 0
	for _, o := range outs {
		total += o.replacements
		if o.fuzzy {
			fuzzy++
		}
	}
	switch {
	case !cur.exists:
		fmt.Fprintf(&b, "Created %s.", path)
	case len(edits) == 1:
		fmt.Fprintf(&b, "Edited %s: replaced %d %s (at line %d).", path, total, plural(total, "occurrence", "occurrences"), outs[0].firstLine)
	default:
		fmt.Fprintf(&b, "Edited %s: applied %d edits (%d %s).", path, len(edits), total, plural(total, "replacement", "replacements"))
	}
	for i, o := range outs {
		if !o.fuzzy {
			continue
		}
		which := "old_string"
		if len(outs) > 1 {
			which = fmt.Sprintf("edit %d's old_string", i+1)
		}
		fmt.Fprintf(&b, "\nNote: %s did not match exactly; it matched one place (line %d) when whitespace is ignored, and that place was replaced.", which, o.firstLine)
		if o.reindented {
			b.WriteString(" new_string was re-indented to the file's indentation there.")
		}
		b.WriteString(" Check the diff below.")
	}
	if cur.exists {
		b.WriteString("\n\n" + diffText(path, cur.content, content, false))
	}
	r := tools.Result{Content: b.String(), Display: fmt.Sprintf("edited %s (%d %s)", path, total, plural(total, "replacement", "replacements"))}
	r.SetMeta("replacements", total)
	if fuzzy > 0 {
		r.SetMeta("whitespace_normalized", fuzzy)
	}
	return r, nil
}

// editFail turns an editFailure into a failed Result.
func editFail(err error) tools.Result {
	var ef *editFailure
	if !errors.As(err, &ef) {
		return tools.Fail(tools.ErrInternal, "the edit could not be applied")
	}
	switch ef.kind {
	case failNotFound:
		return tools.Fail(tools.ErrNotFound, "%s", ef.msg)
	}
	return tools.Fail(tools.ErrValidation, "%s", ef.msg)
}
