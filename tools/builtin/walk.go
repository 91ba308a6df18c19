package builtin

import (
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
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
