package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/docker/docker/api/types/mount"

	"github.com/agentbox/agentbox/sandbox"
)

// protectedState describes one protected path as found in the workspace.
type protectedState struct {
	rel    string
	exists bool
	dev    uint64
	ino    uint64
}

// inspectProtected looks at one protected path without following any
// symlink. A symlink anywhere on the way is refused: a bind mount would
// follow it and could not stop the command from replacing it. A missing
// intermediate directory means there is nothing to protect yet.
func inspectProtected(root *os.Root, rel string) (protectedState, error) {
	st := protectedState{rel: rel}
	parts := strings.Split(path.Clean(rel), "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("%w: protected path %s: %v", sandbox.ErrUnsafeWorkspace, rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return st, fmt.Errorf("%w: protected path %s: %s is a symlink; replace it with the real file or directory", sandbox.ErrUnsafeWorkspace, rel, sub)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return st, nil // e.g. .git is a file (worktree, submodule): its gitdir is not in the workspace
		}
		if i == len(parts)-1 {
			st.exists = true
			if s, ok := fi.Sys().(*syscall.Stat_t); ok {
				st.dev, st.ino = uint64(s.Dev), s.Ino
			}
		}
	}
	return st, nil
}

// fingerprint summarizes the protected paths; a warm container made for
// another fingerprint has the wrong read-only mounts and is discarded.
func (r *Runner) fingerprint() (string, []protectedState, error) {
	root, err := os.OpenRoot(r.workspace)
	if err != nil {
		return "", nil, fmt.Errorf("%w: opening workspace: %v", sandbox.ErrUnsafeWorkspace, err)
	}
	defer root.Close()
	var b strings.Builder
	states := make([]protectedState, 0, len(r.cfg.ProtectedPaths))
	for _, rel := range r.cfg.ProtectedPaths {
		st, err := inspectProtected(root, rel)
		if err != nil {
			return "", nil, err
		}
		states = append(states, st)
		fmt.Fprintf(&b, "%s:%t:%d:%d;", rel, st.exists, st.dev, st.ino)
	}
	return b.String(), states, nil
}

// ensurePlaceholders creates an empty directory for every protected path
// that is missing while its parent directory exists (say .git/hooks in a
// repository without hooks), so that it can be mounted read-only and the
// command cannot create it.
func (r *Runner) ensurePlaceholders(states []protectedState) (bool, error) {
	root, err := os.OpenRoot(r.workspace)
	if err != nil {
		return false, err
	}
	defer root.Close()
	made := false
	for _, st := range states {
		if st.exists {
			continue
		}
		parent := path.Dir(path.Clean(st.rel))
		if fi, err := root.Lstat(parent); err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if err := root.Mkdir(path.Clean(st.rel), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, fmt.Errorf("%w: protected path %s: creating placeholder: %v", sandbox.ErrUnsafeWorkspace, st.rel, err)
		}
		_ = root.Lchown(path.Clean(st.rel), r.uid, r.gid)
		made = true
	}
	return made, nil
}

// mounts lists every mount of a new container and the fingerprint of the
// protected paths it reflects.
func (r *Runner) mounts() ([]mount.Mount, string, error) {
	fp, states, err := r.fingerprint()
	if err != nil {
		return nil, "", err
	}
	if made, err := r.ensurePlaceholders(states); err != nil {
		return nil, "", err
	} else if made {
		if fp, states, err = r.fingerprint(); err != nil {
			return nil, "", err
		}
	}
	ms := []mount.Mount{{
		Type: mount.TypeBind, Source: r.workspace, Target: r.workspace,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}}
	for _, st := range states {
		if !st.exists {
			continue
		}
		p := filepath.Join(r.workspace, filepath.FromSlash(path.Clean(st.rel)))
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: r.initPath, Target: InitPath, ReadOnly: true})
	for _, p := range r.hostMounts {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p, Target: p, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return ms, fp, nil
}
