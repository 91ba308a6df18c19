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
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/tools"
)

const (
	maxLSEntries  = 1000  // entries shown
	maxLSCollect  = 20000 // entries gathered before the walk stops
	lsIndentWidth = 2
)

// LSParams are the parameters of LS.
type LSParams struct {
	Path   string   `json:"path" jsonschema:"The absolute path to the directory to list (must be absolute, not relative)" agentbox:"path"`
	Ignore []string `json:"ignore,omitempty" jsonschema:"Glob patterns of names or paths to leave out, e.g. node_modules or **/*.log"`
}

// Validate implements the pipeline's pure validation.
func (p *LSParams) Validate() error {
	for _, g := range p.Ignore {
		if strings.ContainsRune(g, 0) || !doublestar.ValidatePattern(g) {
			return tools.Errorf(tools.ErrValidation, "ignore pattern %q is not a valid glob", g)
		}
	}
	return nil
}

var lsDescription = tools.Description{
	Summary: "Lists the files and directories below a directory as a tree.",
	Long:    `Shows the tree below path, directories first marked with a trailing slash, sorted by name. Entries ignored by .gitignore, VCS directories and entries matching an ignore glob are left out. At most 1000 entries are shown; list a subdirectory to see more of a big tree.`,
	Usage: `path must be an absolute directory path.
Prefer Glob and Grep when you know what you are looking for.`,
	Examples: []string{
		`{"path": "/work/project"}`,
		`{"path": "/work/project", "ignore": ["node_modules", "*.log"]}`,
	},
}

// LS is the LS tool.
var LS = tools.New("LS", runLS,
	tools.WithKind(tools.KindRead), tools.ReadOnly(), tools.ConcurrencySafe(),
	tools.WithDescription(lsDescription))

// lsEntry is one entry LS found.
type lsEntry struct {
	rel   string
	isDir bool
	link  bool
}

func runLS(ctx context.Context, env *tools.Env, p *LSParams) (tools.Result, error) {
	root, rel, err := env.RootFor(p.Path)
	if err != nil {
		return tools.Result{}, err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tools.Fail(tools.ErrNotFound, "Directory does not exist: %s", p.Path), nil
		}
		return tools.Result{}, failureToToolError(statFailure(err, p.Path))
	}
	if !fi.IsDir() {
		return tools.Fail(tools.ErrValidation, "%s is not a directory; use Read to read a file", p.Path), nil
	}
	hide, err := newDenyFilter(env, p.Path)
	if err != nil {
		return tools.Result{}, err
	}
	if hide.hides(".") {
		return tools.Fail(tools.ErrPermissionDenied, "%s is covered by a deny rule; it was not listed", p.Path), nil
	}
	entries, complete, err := lsRun(ctx, root, filepath.ToSlash(rel), p.Ignore, hide)
	if err != nil {
		return tools.Result{}, err
	}
	text, shown := formatLS(p.Path, entries, complete)
	r := tools.Result{Content: text, Display: fmt.Sprintf("%d entries", shown)}
	r.SetMeta("entries", len(entries))
	r.SetMeta("shown", shown)
	return r, nil
}

// lsRun gathers the entries below start. complete is false when the walk
// stopped at maxLSCollect entries.
func lsRun(ctx context.Context, root *os.Root, start string, ignore []string, hide *denyFilter) ([]lsEntry, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	per := make([][]lsEntry, workers)
	var n atomic.Int64
	ignored := func(rel string) bool {
		name := relTo(start, rel)
		for _, g := range ignore {
			if globMatch(g, name) {
				return true
			}
		}
		return false
	}
	err := parallelWalk(ctx, root, start, workers, true, hide, ignored, func(w int, e fileEntry) {
		rel := e.rel()
		if e.typ != unix.DT_DIR && ignored(rel) {
			return
		}
		if n.Add(1) > maxLSCollect {
			cancel()
			return
		}
		per[w] = append(per[w], lsEntry{rel: relTo(start, rel), isDir: e.typ == unix.DT_DIR, link: e.typ == unix.DT_LNK})
	})
	complete := n.Load() <= maxLSCollect
	if err != nil && complete {
		return nil, false, err
	}
	var out []lsEntry
	for _, p := range per {
		out = append(out, p...)
	}
	return out, complete, nil
}

// formatLS renders entries as an indented tree below dir.
func formatLS(dir string, entries []lsEntry, complete bool) (string, int) {
	children := map[string][]lsEntry{}
	for _, e := range entries {
		parent := path.Dir(e.rel)
		children[parent] = append(children[parent], e)
	}
	for _, c := range children {
		sort.Slice(c, func(i, j int) bool {
			if c[i].isDir != c[j].isDir {
				return c[i].isDir
			}
			return c[i].rel < c[j].rel
		})
	}
	var b strings.Builder
	b.WriteString("- " + tools.EncodeName(strings.TrimSuffix(dir, "/")) + "/\n")
	shown := 0
	var walk func(parent string, depth int) bool
	walk = func(parent string, depth int) bool {
		for _, e := range children[parent] {
			if shown >= maxLSEntries {
				return false
			}
			name := tools.EncodeName(path.Base(e.rel))
			switch {
			case e.isDir:
				name += "/"
			case e.link:
				name += " (symlink)"
			}
			b.WriteString(strings.Repeat(" ", depth*lsIndentWidth) + "- " + name + "\n")
			shown++
			if e.isDir && !walk(e.rel, depth+1) {
				return false
			}
		}
		return true
	}
	walk(".", 1)
	if shown < len(entries) || !complete {
		total := fmt.Sprint(len(entries))
		if !complete {
			total = fmt.Sprintf("more than %d", maxLSCollect)
		}
		fmt.Fprintf(&b, "[Showing %d of %s entries. List a subdirectory, or use Glob, to see the rest.]\n", shown, total)
	}
	if len(entries) == 0 {
		b.WriteString("  (empty)\n")
	}
	return strings.TrimRight(b.String(), "\n"), shown
}
