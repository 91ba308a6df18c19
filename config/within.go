package config

import (
	"path/filepath"
	"strings"
)

// Within reports whether path p is dir or lies beneath it. It is the one
// "is this path inside the workspace" check every package uses.
//
// Both paths are cleaned first ("/ws/../etc" is not within "/ws"); the
// test is lexical — no symlink is resolved, so callers resolve first when
// the answer must hold on disk, and the kernel (os.Root, openat2, mount
// namespaces) remains the boundary. An absolute and a relative path are
// never within each other.
func Within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	switch {
	case filepath.IsAbs(p) != filepath.IsAbs(dir):
		return false
	case p == dir || dir == "/":
		return true
	case dir == ".":
		return filepath.IsLocal(p)
	}
	return strings.HasPrefix(p, dir+"/")
}

// ResolveExisting returns p with the symlinks of its longest existing
// prefix resolved and the rest appended: where p leads on disk now, even
// before its last parts are created. Give it an absolute path.
func ResolveExisting(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
