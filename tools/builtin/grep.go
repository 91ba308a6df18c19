package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/tools"
)

// maxPatternBytes bounds Grep patterns and globs.
const maxPatternBytes = 16 << 10

// GrepParams are the parameters of Grep.
type GrepParams struct {
	Pattern     string `json:"pattern" jsonschema:"The regular expression to search for in file contents (RE2 syntax)"`
	Path        string `json:"path,omitempty" jsonschema:"File or directory to search in. Defaults to the current working directory" agentbox:"path,cwd"`
	Glob        string `json:"glob,omitempty" jsonschema:"Glob pattern to filter files, e.g. *.js or *.{ts,tsx}; several can be separated by spaces; a leading ! excludes"`
	Type        string `json:"type,omitempty" jsonschema:"File type to search, as rg names them: go, py, js, ts, rust, java, c, cpp, md, json, yaml, sh, ..."`
	OutputMode  string `json:"output_mode,omitempty" jsonschema:"content shows matching lines; files_with_matches shows file paths (the default); count shows the number of matching lines per file" enum:"content,files_with_matches,count"`
	IgnoreCase  bool   `json:"-i,omitempty" jsonschema:"Case-insensitive search"`
	LineNumbers *bool  `json:"-n,omitempty" jsonschema:"Show line numbers in output. Content mode only; defaults to true"`
	After       int    `json:"-A,omitempty" jsonschema:"Number of lines to show after each match. Content mode only" minimum:"0"`
	Before      int    `json:"-B,omitempty" jsonschema:"Number of lines to show before each match. Content mode only" minimum:"0"`
	Context     int    `json:"-C,omitempty" jsonschema:"Number of lines to show before and after each match. Content mode only" minimum:"0"`
	Multiline   bool   `json:"multiline,omitempty" jsonschema:"Let patterns span lines and . match newlines. Default false"`
	HeadLimit   int    `json:"head_limit,omitempty" jsonschema:"Show only the first N lines, files or counts, depending on the output mode" minimum:"0"`
}

// Validate implements the pipeline's pure validation.
func (p *GrepParams) Validate() error {
	_, err := p.spec()
	return err
}

// spec compiles the parameters into a grepSpec.
func (p *GrepParams) spec() (*grepSpec, error) {
	if p.Pattern == "" {
		return nil, tools.Errorf(tools.ErrValidation, "pattern is empty")
	}
	if len(p.Pattern) > maxPatternBytes {
		return nil, tools.Errorf(tools.ErrValidation, "pattern is %s long; the limit is %s", humanBytes(int64(len(p.Pattern))), humanBytes(maxPatternBytes))
	}
	re, err := compileGrepPattern(p.Pattern, p.IgnoreCase, p.Multiline)
	if err != nil {
		return nil, tools.Errorf(tools.ErrValidation, "pattern is not a valid RE2 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	s := &grepSpec{re: re, multiline: p.Multiline, mode: p.OutputMode, lineNumbers: true}
	s.literal, s.fold = requiredLiteral(p.Pattern, p.IgnoreCase)
	if s.fold {
		s.rare = rareIndex(s.literal)
	}
	if s.mode == "" {
		s.mode = modeFiles
	}
	switch s.mode {
	case modeContent, modeFiles, modeCount:
	default:
		return nil, tools.Errorf(tools.ErrValidation, "output_mode %q is not one of content, files_with_matches, count", p.OutputMode)
	}
	if p.LineNumbers != nil {
		s.lineNumbers = *p.LineNumbers
	}
	s.before, s.after = p.Before, p.After
	if p.Context > 0 {
		s.before, s.after = max(s.before, p.Context), max(s.after, p.Context)
	}
	if s.before < 0 || s.after < 0 || p.HeadLimit < 0 {
		return nil, tools.Errorf(tools.ErrValidation, "-A, -B, -C and head_limit must not be negative")
	}
	if p.Glob != "" {
		if strings.ContainsRune(p.Glob, 0) || len(p.Glob) > maxPatternBytes {
			return nil, tools.Errorf(tools.ErrValidation, "glob is too long or contains a NUL byte")
		}
		s.include, s.exclude, err = parseGlobs(p.Glob)
		if err != nil {
			return nil, tools.Errorf(tools.ErrValidation, "%v", err)
		}
	}
	if p.Type != "" {
		for _, t := range strings.Split(p.Type, ",") {
			globs, ok := fileTypes[strings.TrimSpace(t)]
			if !ok {
				return nil, tools.Errorf(tools.ErrValidation, "unknown file type %q; known types: %s", t, typeNames())
			}
			s.typeGlobs = append(s.typeGlobs, globs...)
		}
	}
	return s, nil
}

var grepDescription = tools.Description{
	Summary: "Searches file contents with regular expressions (RE2 syntax), like ripgrep.",
	Long: `Searches every file below path (default: the working directory), in parallel, for lines matching pattern. Files ignored by .gitignore, VCS directories and binary files are skipped. Filter files with glob (e.g. *.js, **/*.{ts,tsx}) or type (go, py, js, ts, rust, java, c, cpp, md, json, yaml, sh, ...).

output_mode files_with_matches (the default) lists matching files, most recently modified first; content shows the matching lines as path:line:text, with -A/-B/-C context lines as path-line-text and -- between separate groups; count shows path:count per file. head_limit keeps only the first N entries.`,
	Usage: `The syntax is RE2 (Go's regexp), close to ripgrep's: escape literal braces and parentheses (interface\{\}, foo\(), there are no look-arounds or backreferences.
By default a match stays within one line; set multiline for patterns that span lines (then . matches newlines too).
Always use Grep for searching file contents; do not run grep or rg through Bash.
For open-ended searches that need several rounds, batch several Grep and Glob calls.`,
	Examples: []string{
		`{"pattern": "func New[A-Z]\\w*", "type": "go"}`,
		`{"pattern": "TODO", "output_mode": "content", "-C": 2, "path": "/work/project/src"}`,
		`{"pattern": "struct \\{[\\s\\S]*?field", "multiline": true, "output_mode": "content"}`,
	},
}

// Grep is the Grep tool.
var Grep = tools.New("Grep", runGrep,
	tools.WithKind(tools.KindSearch), tools.ReadOnly(), tools.ConcurrencySafe(),
	tools.WithDescription(grepDescription))

func runGrep(ctx context.Context, env *tools.Env, p *GrepParams) (tools.Result, error) {
	spec, err := p.spec()
	if err != nil {
		return tools.Result{}, err
	}
	root, rel, err := env.RootFor(p.Path)
	if err != nil {
		return tools.Result{}, err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tools.Fail(tools.ErrNotFound, "Path does not exist: %s", p.Path), nil
		}
		return tools.Result{}, failureToToolError(statFailure(err, p.Path))
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return tools.Result{}, failureToToolError(checkRegular(fi, p.Path))
	}
	if spec.hide, err = newDenyFilter(env, p.Path); err != nil {
		return tools.Result{}, err
	}
	if spec.hide.hides(".") {
		return tools.Fail(tools.ErrPermissionDenied, "%s is covered by a deny rule; it was not searched", p.Path), nil
	}
	results, err := grepRun(ctx, root, filepath.ToSlash(rel), spec)
	if err != nil {
		return tools.Result{}, err
	}
	base := p.Path
	if !fi.IsDir() {
		base = path.Dir(p.Path)
	}
	text, shown, total := formatGrep(results, spec, base, p.HeadLimit)
	r := tools.Result{Content: text}
	switch spec.mode {
	case modeFiles:
		r.Display = fmt.Sprintf("%d %s", total, plural(total, "file", "files"))
	case modeCount:
		r.Display = fmt.Sprintf("counts in %d %s", total, plural(total, "file", "files"))
	default:
		r.Display = fmt.Sprintf("%d %s", total, plural(total, "line", "lines"))
	}
	r.SetMeta("files", len(results))
	r.SetMeta("shown", shown)
	return r, nil
}
