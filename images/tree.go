package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// entry is one file system object of an image's root file system. Every
// entry is owned by root in the image.
type entry struct {
	Path string      // absolute, clean
	Mode os.FileMode // permission bits plus os.ModeDir / os.ModeSymlink / os.ModeSticky
	Link string      // symlink target
	Data []byte      // regular file content (small files)
	From string      // regular file content copied from this host path (large files)
}

// tree is an image's root file system before it is built.
type tree struct {
	entries map[string]entry
}

func newTree() *tree { return &tree{entries: map[string]entry{}} }

// dir adds a directory and its missing parents (0755).
func (t *tree) dir(p string, mode os.FileMode) {
	p = filepath.Clean(p)
	if p == "/" {
		return
	}
	t.dir(filepath.Dir(p), 0o755)
	if _, ok := t.entries[p]; ok {
		return
	}
	t.entries[p] = entry{Path: p, Mode: os.ModeDir | mode}
}

func (t *tree) file(p string, mode os.FileMode, data []byte) {
	p = filepath.Clean(p)
	t.dir(filepath.Dir(p), 0o755)
	t.entries[p] = entry{Path: p, Mode: mode, Data: data}
}

func (t *tree) copyFrom(p string, mode os.FileMode, from string) {
	p = filepath.Clean(p)
	t.dir(filepath.Dir(p), 0o755)
	t.entries[p] = entry{Path: p, Mode: mode, From: from}
}

func (t *tree) symlink(p, target string) {
	p = filepath.Clean(p)
	t.dir(filepath.Dir(p), 0o755)
	t.entries[p] = entry{Path: p, Mode: os.ModeSymlink | 0o777, Link: target}
}

// has reports whether p or one of its parents is already a non-directory.
func (t *tree) blocked(p string) bool {
	for q := filepath.Clean(p); q != "/"; q = filepath.Dir(q) {
		if e, ok := t.entries[q]; ok && !e.Mode.IsDir() {
			return true
		}
	}
	return false
}

func (t *tree) sorted() []entry {
	out := make([]entry, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// digest is a content hash of the whole tree: path, mode, link target and
// file content of every entry.
func (t *tree) digest() (string, error) {
	h := sha256.New()
	for _, e := range t.sorted() {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00", e.Path, uint32(e.Mode), e.Link)
		switch {
		case e.From != "":
			f, err := os.Open(e.From)
			if err != nil {
				return "", err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return "", err
			}
		default:
			h.Write(e.Data)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// materialize writes the tree below dir, which must be empty.
func (t *tree) materialize(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	entries := t.sorted()
	for _, e := range entries {
		rel := strings.TrimPrefix(e.Path, "/")
		switch {
		case e.Mode.IsDir():
			if err := root.Mkdir(rel, 0o700); err != nil {
				return err
			}
		case e.Mode&os.ModeSymlink != 0:
			if err := root.Symlink(e.Link, rel); err != nil {
				return err
			}
		default:
			data := e.Data
			if e.From != "" {
				if data, err = os.ReadFile(e.From); err != nil {
					return err
				}
			}
			if err := root.WriteFile(rel, data, 0o600); err != nil {
				return err
			}
		}
	}
	// Modes last (children first) so that the umask and read-only
	// directories do not get in the way.
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Mode&os.ModeSymlink != 0 {
			continue
		}
		if err := root.Chmod(strings.TrimPrefix(e.Path, "/"), e.Mode&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)); err != nil {
			return err
		}
	}
	return nil
}
