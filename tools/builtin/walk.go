package builtin

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// vcsDirs are never walked into.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, ".bzr": true}

// walkOptions control walkTree.
type walkOptions struct {
	// gitignore applies .gitignore files found from the root down.
	gitignore bool
	// skip, when set, is asked about every entry below start; returning
	// true leaves it out (and does not descend into a directory).
	skip func(rel string, isDir bool) bool
}

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

// walkTree calls fn for every file and directory below start (a
// slash-separated path relative to root's FS, "." for the root), in lexical
// order, skipping VCS directories, symlinks' targets (a symlink is reported
// but never followed) and, when asked, gitignored entries. A directory that
// cannot be read is skipped silently, like rg does. fn may return
// fs.SkipDir for a directory, or fs.SkipAll.
func walkTree(ctx context.Context, fsys fs.FS, start string, opt walkOptions, fn func(rel string, d fs.DirEntry) error) error {
	var ign map[string]ignoreSet
	if opt.gitignore {
		ign = map[string]ignoreSet{start: ignoresFor(fsys, start)}
	}
	err := fs.WalkDir(fsys, start, func(rel string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if rel == start {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == start {
			if d.IsDir() {
				return nil
			}
			return fn(rel, d)
		}
		isDir := d.IsDir()
		if isDir && vcsDirs[d.Name()] {
			return fs.SkipDir
		}
		if ign != nil {
			set := ign[path.Dir(rel)]
			if set.ignored(rel, isDir) {
				if isDir {
					return fs.SkipDir
				}
				return nil
			}
			if isDir {
				ign[rel] = set.withFile(fsys, rel)
			}
		}
		if opt.skip != nil && opt.skip(rel, isDir) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		return fn(rel, d)
	})
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// rootFS returns root's file system view.
func rootFS(root *os.Root) fs.FS { return root.FS() }
