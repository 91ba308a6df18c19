package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"

	udiff "github.com/aymanbagabas/go-udiff"
)

// maxTextDiff is the largest file shown as a text diff; larger ones are
// summarised.
const maxTextDiff = 4 << 20

// Diff writes a unified diff of entry id's changes to w. Binary and large
// files, symlinks, special files and mode changes are summarised in
// git-like header lines.
func (s *Store) Diff(ctx context.Context, id string, w io.Writer) error {
	e, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	for _, ch := range e.Changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.diffChange(w, ch); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) diffChange(w io.Writer, ch Change) error {
	p := quotePath(ch.Path)
	fmt.Fprintf(w, "diff --agentbox a/%s b/%s\n", p, p)
	o, n := ch.Old, ch.New
	switch {
	case o == nil:
		fmt.Fprintf(w, "new %s mode %06o\n", n.Type, n.Mode)
	case n == nil:
		fmt.Fprintf(w, "deleted %s mode %06o\n", o.Type, o.Mode)
	case o.Type != n.Type:
		fmt.Fprintf(w, "type changed: %s -> %s\n", o.Type, n.Type)
	case o.Mode != n.Mode:
		fmt.Fprintf(w, "old mode %06o\nnew mode %06o\n", o.Mode, n.Mode)
	}
	oldText, oldOK, err := s.textOf(o)
	if err != nil {
		return err
	}
	newText, newOK, err := s.textOf(n)
	if err != nil {
		return err
	}
	if !oldOK || !newOK {
		fmt.Fprintf(w, "Binary or special content: %s -> %s\n", describeNode(o), describeNode(n))
		return nil
	}
	if oldText == newText {
		return nil
	}
	oldLabel, newLabel := "a/"+p, "b/"+p
	if o == nil || o.Type != TypeFile && o.Type != TypeSymlink {
		oldLabel = "/dev/null"
	}
	if n == nil || n.Type != TypeFile && n.Type != TypeSymlink {
		newLabel = "/dev/null"
	}
	_, err = io.WriteString(w, udiff.Unified(oldLabel, newLabel, oldText, newText))
	return err
}

// textOf returns a node's content for a text diff: a file's text, a
// symlink's target (as one line), "" for absent or directories. ok is false
// for binary, large, unreadable or special content.
func (s *Store) textOf(n *Node) (string, bool, error) {
	if n == nil {
		return "", true, nil
	}
	switch n.Type {
	case TypeDir:
		return "", true, nil
	case TypeSymlink:
		return "-> " + n.Link + "\n", true, nil
	case TypeFile:
		if n.Unreadable || n.Hash == "" || n.Size > maxTextDiff {
			return "", false, nil
		}
		data, err := s.readBlob(n.Hash)
		if err != nil {
			return "", false, err
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return "", false, nil
		}
		return string(data), true, nil
	}
	return "", false, nil
}

func describeNode(n *Node) string {
	switch {
	case n == nil:
		return "(none)"
	case n.Type == TypeFile && n.Hash != "":
		return fmt.Sprintf("file %d bytes %s", n.Size, n.Hash[:12])
	case n.Type == TypeFile:
		return fmt.Sprintf("file %d bytes (unreadable)", n.Size)
	case n.Type == TypeSymlink:
		return "symlink to " + quotePath(n.Link)
	default:
		return string(n.Type)
	}
}
