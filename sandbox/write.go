package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/config"
)

// Errors of [Runner].WriteFile, besides those of Run. A *[WriteError] wraps
// one of them (or none, for other failures).
var (
	// ErrProtected: the path is protected (config.Protection) and the
	// write was not marked approved. Nothing was handed over.
	ErrProtected = errors.New("protected path")
	// ErrReadOnly: the kernel refused the write (EROFS): the path is on a
	// read-only mount, such as an existing protected path.
	ErrReadOnly = errors.New("read-only path")
	// ErrSymlink: a component of the path is a symbolic link (ELOOP) or
	// resolves outside the workspace (EXDEV). Writes never follow one.
	ErrSymlink = errors.New("symbolic link in path")
	// ErrNoSpace: the disk or quota is full (ENOSPC, EDQUOT), or the file
	// is larger than the sandbox's file size limit (EFBIG).
	ErrNoSpace = errors.New("no space for the file")
)

// FileWrite is one file for [Runner].WriteFile.
type FileWrite struct {
	// Path is absolute, clean and beneath the workspace (not the
	// workspace itself). No component may be a symlink.
	Path string
	// Content is the file's whole new content.
	Content []byte
	// Mode is the permission bits of a new file; an existing file keeps
	// its own.
	Mode fs.FileMode
	// ApprovedProtected lets a write to a protected path through the
	// runner's own check (a person or an explicit rule approved it). The
	// kernel still refuses a path on a read-only mount.
	ApprovedProtected bool
	// Gate, when set, is waited for before the file (or any directory it
	// needs) becomes visible in the workspace, and the write is withdrawn
	// if it fails: the snapshot's record of the call must reach the disk
	// first. A runner may stage the content meanwhile (the Docker
	// backend's init writes and fsyncs its temporary file); one that
	// cannot must call Gate before it writes anything. It is called at
	// most once per attempt and may be called again.
	Gate func() error
}

// WriteError is a write the sandbox refused or that failed. Errors.Is
// matches its Kind.
type WriteError struct {
	// Kind is ErrProtected, ErrReadOnly, ErrSymlink, ErrNoSpace or nil.
	Kind error
	// Path is the workspace-relative path at fault: the file, or the
	// parent that is a symlink or not a directory.
	Path string
	// Errno names the system error ("EROFS"), "" when there is none.
	Errno string
	// Detail says what happened, for logs and for the caller's message.
	Detail string
}

func (e *WriteError) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error() + ": ")
	}
	fmt.Fprintf(&b, "%s: %s", e.Path, e.Detail)
	return b.String()
}

func (e *WriteError) Unwrap() error { return e.Kind }

// WriteErrorKind is the sentinel for an errno name from the container.
func WriteErrorKind(errno string) error {
	switch errno {
	case "EROFS":
		return ErrReadOnly
	case "ELOOP", "EXDEV":
		return ErrSymlink
	case "ENOSPC", "EDQUOT", "EFBIG":
		return ErrNoSpace
	}
	return nil
}

// NormalizeWrite checks w against the workspace and returns the file's
// slash-separated path relative to it.
func NormalizeWrite(w FileWrite, workspace string) (string, error) {
	if !filepath.IsAbs(w.Path) || strings.IndexByte(w.Path, 0) >= 0 {
		return "", fmt.Errorf("%w: write path %q is not absolute", ErrInvalidSpec, w.Path)
	}
	p := filepath.Clean(w.Path)
	if p != w.Path {
		return "", fmt.Errorf("%w: write path %q is not clean", ErrInvalidSpec, w.Path)
	}
	if p == workspace || !config.Within(p, workspace) {
		return "", fmt.Errorf("%w: write path %s is not beneath the workspace %s", ErrInvalidSpec, p, workspace)
	}
	if w.Mode&^fs.ModePerm != 0 {
		return "", fmt.Errorf("%w: write mode %v is not permission bits", ErrInvalidSpec, w.Mode)
	}
	rel, err := filepath.Rel(workspace, p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return filepath.ToSlash(rel), nil
}
