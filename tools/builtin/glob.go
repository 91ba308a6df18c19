package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/tools"
)

const maxGlobResults = 100

// GlobParams are the parameters of Glob.
type GlobParams struct {
	Pattern string `json:"pattern" jsonschema:"The glob pattern to match files against, e.g. **/*.go or src/**/*.{ts,tsx}"`
	Path    string `json:"path,omitempty" jsonschema:"The directory to search in. Omit it to search the current working directory; never pass the string null or undefined" agentbox:"path,cwd"`
}

// Validate implements the pipeline's pure validation.
func (p *GlobParams) Validate() error { return validatePattern(p.Pattern) }

// validatePattern checks a glob given to Glob.
func validatePattern(pat string) error {
	switch {
	case pat == "":
		return tools.Errorf(tools.ErrValidation, "pattern is empty")
	case len(pat) > maxPatternBytes:
		return tools.Errorf(tools.ErrValidation, "pattern is %s long; the limit is %s", humanBytes(int64(len(pat))), humanBytes(maxPatternBytes))
	case strings.ContainsRune(pat, 0):
		return tools.Errorf(tools.ErrValidation, "pattern contains a NUL byte")
	case !doublestar.ValidatePattern(strings.TrimPrefix(pat, "/")):
		return tools.Errorf(tools.ErrValidation, "pattern %q is not a valid glob (check brackets and braces)", pat)
	}
	for _, seg := range strings.Split(pat, "/") {
		if seg == ".." {
			return tools.Errorf(tools.ErrValidation, "pattern %q contains '..'; pass the directory as path instead", pat)
		}
	}
	return nil
}

var globDescription = tools.Description{
	Summary: "Finds files by name with glob patterns, newest first.",
	Long:    `Matches file paths below path (default: the working directory) against a glob: * matches within one path segment, ** matches any number of directories, ? one character, [abc] a class and {a,b} alternatives. Returns absolute paths of matching files sorted by modification time, most recent first, at most 100 of them. Files ignored by .gitignore and VCS directories such as .git are skipped.`,
	Usage: `Use it to find files by name; use Grep to find files by content.
A pattern without a slash, like *.go, matches only in path itself; use **/*.go to search every directory.
When you are exploring open-ended, prefer several targeted Globs and Greps in one batch.`,
	Examples: []string{
		`{"pattern": "**/*.go"}`,
		`{"pattern": "src/**/*.{ts,tsx}", "path": "/work/project"}`,
	},
}

// Glob is the Glob tool.
var Glob = tools.New("Glob", runGlob,
	tools.WithKind(tools.KindSearch), tools.ReadOnly(), tools.ConcurrencySafe(),
	tools.WithDescription(globDescription))

// globMatchFile is one file Glob found.
type globMatchFile struct {
	rel   string
	mtime time.Time
}

func runGlob(ctx context.Context, env *tools.Env, p *GlobParams) (tools.Result, error) {
	if err := validatePattern(p.Pattern); err != nil {
		return tools.Result{}, err
	}
	dir, pat := p.Path, p.Pattern
	if strings.HasPrefix(pat, "/") {
		base, rest := doublestar.SplitPattern(pat)
		dir, pat = base, rest
	} else if base, rest := doublestar.SplitPattern(pat); base != "." && base != "" {
		dir, pat = filepath.Join(dir, base), rest
	}
	root, rel, err := env.RootFor(dir)
	if err != nil {
		return tools.Result{}, err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tools.Fail(tools.ErrNotFound, "Directory does not exist: %s", dir), nil
		}
		return tools.Result{}, failureToToolError(statFailure(err, dir))
	}
	if !fi.IsDir() {
		return tools.Fail(tools.ErrValidation, "%s is not a directory; pass a directory as path", dir), nil
	}
	hide, err := newDenyFilter(env, dir)
	if err != nil {
		return tools.Result{}, err
	}
	if hide.hides(".") {
		return tools.Fail(tools.ErrPermissionDenied, "%s is covered by a deny rule; it was not searched", dir), nil
	}
	found, err := globRun(ctx, root, filepath.ToSlash(rel), pat, 0, hide)
	if err != nil {
		return tools.Result{}, err
	}
	text, shown := formatGlob(found, dir)
	r := tools.Result{Content: text, Display: fmt.Sprintf("%d %s", len(found), plural(len(found), "file", "files"))}
	r.SetMeta("matches", len(found))
	r.SetMeta("shown", shown)
	return r, nil
}

// globRun returns the files below start (relative to root) whose path
// relative to start matches pat, newest first (ties by path).
func globRun(ctx context.Context, root *os.Root, start, pat string, workers int, hide *denyFilter) ([]globMatchFile, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Without **, a pattern of k segments cannot match below depth k.
	var skipDir func(string) bool
	if !strings.Contains(pat, "**") {
		k := strings.Count(pat, "/") + 1
		skipDir = func(rel string) bool { return strings.Count(relTo(start, rel), "/")+1 >= k }
	}
	per := make([][]globMatchFile, workers)
	err := parallelWalk(ctx, root, start, workers, true, hide, skipDir, func(w int, e fileEntry) {
		if e.typ == unix.DT_DIR {
			return
		}
		name := relTo(start, e.rel())
		if !doublestar.MatchUnvalidated(pat, name) {
			return
		}
		st, err := statEntry(e)
		if err != nil {
			return
		}
		per[w] = append(per[w], globMatchFile{rel: name, mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)})
	})
	if err != nil {
		return nil, err
	}
	var out []globMatchFile
	for _, p := range per {
		out = append(out, p...)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].mtime.Equal(out[j].mtime) {
			return out[i].mtime.After(out[j].mtime)
		}
		return out[i].rel < out[j].rel
	})
	return out, nil
}

// formatGlob renders Glob's result with absolute paths below dir.
func formatGlob(found []globMatchFile, dir string) (string, int) {
	if len(found) == 0 {
		return "No files found", 0
	}
	shown := min(len(found), maxGlobResults)
	var b strings.Builder
	for _, f := range found[:shown] {
		b.WriteString(tools.EncodeName(path.Join(dir, f.rel)) + "\n")
	}
	if shown < len(found) {
		fmt.Fprintf(&b, "[Showing the %d most recently modified of %d matching files. Use a more specific pattern or path to see the others.]\n", shown, len(found))
	}
	return strings.TrimRight(b.String(), "\n"), shown
}
