package builtin

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/agentbox/agentbox/tools"
)

// vcsDirs are never walked into.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, ".bzr": true}

// ignoreSet is the gitignore patterns in force in one directory, most
// generic first.
type ignoreSet []gitignore.Pattern

// ignored reports whether rel (slash-separated, relative to the root) is
// ignored; the last pattern that matches decides, as in git.
func (s ignoreSet) ignored(rel string, isDir bool) bool {
	if len(s) == 0 {
		return false
	}
	parts := strings.Split(rel, "/")
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// withFile returns s plus the patterns of dir's .gitignore, if any.
func (s ignoreSet) withFile(fsys fs.FS, dir string) ignoreSet {
	data, err := fs.ReadFile(fsys, path.Join(dir, ".gitignore"))
	if err != nil || len(data) == 0 {
		return s
	}
	return s.withData(data, dir)
}

// withData returns s plus the patterns in data, a .gitignore of dir.
func (s ignoreSet) withData(data []byte, dir string) ignoreSet {
	if len(data) == 0 {
		return s
	}
	var domain []string
	if dir != "." {
		domain = strings.Split(dir, "/")
	}
	out := append(ignoreSet(nil), s...)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, gitignore.ParsePattern(line, domain))
	}
	return out
}

// ignoresFor collects the .gitignore patterns that apply inside dir: those
// of dir and of each of its ancestors up to the root.
func ignoresFor(fsys fs.FS, dir string) ignoreSet {
	var s ignoreSet
	s = s.withFile(fsys, ".")
	if dir == "." {
		return s
	}
	cur := "."
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		s = s.withFile(fsys, cur)
	}
	return s
}

// denyFilter hides what a deny rule covers (Env.Hidden, e.g.
// Read(./secrets/**) for Grep) from a walk's results. A walk follows no
// symlink below its start, so an entry really is at the start's
// resolution joined with its path below the start; it is shown at the
// start as written joined with that path. Both are checked, so a search
// through a symlinked directory or from a parent of a denied directory
// shows nothing under it. A nil *denyFilter hides nothing.
type denyFilter struct {
	env         *tools.Env
	shown, real string // the walk's start, as written and resolved
}

// newDenyFilter returns the filter for a walk from the absolute path
// start, or nil when no deny rule can hide anything from the call. It
// fails when start leads out of the workspace through a symlink.
func newDenyFilter(env *tools.Env, start string) (*denyFilter, error) {
	if env.Hidden == nil {
		return nil, nil
	}
	real, err := env.RealPath(start)
	if err != nil {
		return nil, err
	}
	return &denyFilter{env: env, shown: filepath.Clean(start), real: real}, nil
}

// hides reports whether the entry at rel (slash-separated, relative to the
// start; "." for the start) is covered by a deny rule.
func (f *denyFilter) hides(rel string) bool {
	if f == nil {
		return false
	}
	return f.env.Hidden(path.Join(f.shown, rel)) || f.env.Hidden(path.Join(f.real, rel))
}

// hidesLink is hides for a symlink: it also hides the link when where it
// leads is covered. A link out of the workspace stays listed (its name is
// all a walk shows; reading through it is refused).
func (f *denyFilter) hidesLink(rel string) bool {
	if f == nil {
		return false
	}
	if f.hides(rel) {
		return true
	}
	real, err := f.env.RealPath(path.Join(f.real, rel))
	return err == nil && f.env.Hidden(real)
}
