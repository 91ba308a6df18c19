package docker

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
)

// Mounts of a container, and the protected paths in them.
//
// A writable container gets the workspace read-write with, on top:
//   - .git (when it is a directory) bind-mounted read-write onto itself,
//     so that it is a mount point: a command can neither rename nor
//     replace it (EBUSY), only write its objects, refs and index;
//   - every existing entry of config.GitBehaviourFiles in .git read-only
//     (config, hooks, info, commondir, objects/info, modules, worktrees…),
//     with hooks/ and info/ created empty first when missing;
//   - every existing workspace-root match of sandbox.protected_paths
//     read-only (.vscode, .envrc, .agentbox, …); for one that is a symlink
//     inside the workspace, its target instead (host programs follow it);
//   - every existing path of the host-run closure read-only, at any depth
//     (config.Closure, computed shallowly through the workspace
//     descriptor at each hand-over: core.hooksPath, the scripts hooks and
//     hook managers name, what the root .envrc loads), up to
//     maxClosureMounts.
//
// Protected paths that do not exist, or that match deeper in the tree,
// cannot be mounted without littering the workspace; the tool layer finds
// changes to them in the call's changeset and reverts them.
//
// A read-only container (Spec.ReadOnly) gets the workspace read-only and
// nothing on top: the kernel refuses every write (EROFS).

// gitPlaceholders are created empty when missing so they can be mounted
// read-only (a command could otherwise plant a hook or attributes).
var gitPlaceholders = []string{"hooks", "info"}

// sources opens every bind source of a new container (see pin.go). The
// caller closes them with closeSources.
func (r *Runner) sources(readOnly bool) (srcs []bindSource, err error) {
	srcs, err = r.workspaceSources(readOnly)
	defer func() {
		if err != nil {
			closeSources(srcs)
			srcs = nil
		}
	}()
	if err != nil {
		return srcs, err
	}
	n := len(srcs)
	initF, err := openHost(r.initPath)
	if err != nil {
		return srcs, fmt.Errorf("opening the init binary: %w", err)
	}
	srcs = append(srcs, bindSource{target: InitPath, fd: initF, path: r.initPath, ro: true})
	for _, p := range r.hostMounts {
		f, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return srcs, fmt.Errorf("opening host mount %s: %w", p, err)
		}
		srcs = append(srcs, bindSource{target: p, fd: os.NewFile(uintptr(f), p), path: p, ro: true})
	}
	caches, err := r.cacheSources()
	srcs = append(srcs, caches...)
	if err != nil {
		return srcs, err
	}
	eg, err := r.egressSource()
	srcs = append(srcs, eg...)
	if err != nil {
		return srcs, err
	}
	for i := range srcs[n:] {
		if err := srcs[n+i].describe(); err != nil {
			return srcs, errUnsafe("%v", err)
		}
	}
	return srcs, nil
}

// workspaceSources opens the sources an agent can change: the workspace
// itself and, for a writable container, its protected paths. They are
// all described (type, device, inode) when it returns.
func (r *Runner) workspaceSources(readOnly bool) (srcs []bindSource, err error) {
	defer func() {
		if err != nil {
			closeSources(srcs)
			srcs = nil
		}
	}()
	ws, err := r.dupWorkspace()
	if err != nil {
		return nil, err
	}
	srcs = append(srcs, bindSource{target: r.workspace, fd: ws, path: r.workspace, ro: readOnly})
	if err := srcs[0].describe(); err != nil {
		return srcs, errUnsafe("workspace: %v", err)
	}
	if !readOnly {
		prot, err := r.protectedSources(int(ws.Fd()))
		srcs = append(srcs, prot...)
		if err != nil {
			return srcs, err
		}
	}
	// Sockets, in both flavours: a read-only mount does not stop a
	// connect (sockets.go). Not under gVisor: its sandbox cannot start
	// with a file mounted over a socket; its runtime refuses host sockets
	// altogether, or, when the egress relay needs them, a workspace
	// socket refuses the call (gvisorRuntime).
	if r.gvisor {
		return srcs, r.gvisorSockets(int(ws.Fd()))
	}
	masks, err := r.maskSources(int(ws.Fd()))
	srcs = append(srcs, masks...)
	return srcs, err
}

func closeSources(srcs []bindSource) {
	for _, b := range srcs {
		if b.fd != nil {
			b.fd.Close()
		}
	}
}

// dupWorkspace returns a new O_PATH descriptor of the workspace directory
// the Runner opened (the same inode even if the path was swapped since).
func (r *Runner) dupWorkspace() (*os.File, error) {
	if r.wsFD == nil {
		f, err := openWorkspace(r.workspace)
		if err != nil {
			return nil, err
		}
		r.wsFD = f
	}
	fd, err := unix.FcntlInt(r.wsFD.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.workspace), nil
}

func openWorkspace(ws string) (*os.File, error) {
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errUnsafe("opening workspace %s: %v", ws, err)
	}
	return os.NewFile(uintptr(fd), ws), nil
}

// protectedSources opens the protected paths to mount in a writable
// container: .git and its behaviour files, and root-level matches of
// sandbox.protected_paths.
func (r *Runner) protectedSources(ws int) ([]bindSource, error) {
	var out []bindSource
	var openIn func(dir int, name, rel string) (*os.File, bool, error)
	add := func(rel string, ro bool, f *os.File) error {
		b := bindSource{target: filepath.Join(r.workspace, filepath.FromSlash(rel)), fd: f, ro: ro,
			path: filepath.Join(r.workspace, filepath.FromSlash(rel))}
		out = append(out, b)
		if err := out[len(out)-1].describe(); err != nil {
			return errUnsafe("protected path %s: %v; remove or replace it", rel, err)
		}
		return nil
	}
	open := func(rel string) (*os.File, bool, error) { return openIn(ws, rel, rel) }
	openIn = func(dir int, name, rel string) (*os.File, bool, error) {
		f, err := openBeneath(dir, name)
		switch {
		case err == nil:
			return f, true, nil
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			return nil, false, nil
		case errors.Is(err, unix.ELOOP):
			return nil, false, errUnsafe("protected path %s is (or lies below) a symlink; replace it with the real file or directory", rel)
		case errors.Is(err, unix.EXDEV):
			return nil, false, errUnsafe("protected path %s lies on another mount inside the workspace", rel)
		}
		return nil, false, errUnsafe("protected path %s: %v", rel, err)
	}

	// One directory read each of the root and of .git tells what exists:
	// only that is opened (this runs at every hand-over).
	rootNames, err := dirNames(ws)
	if err != nil {
		return out, errUnsafe("reading the workspace: %v", err)
	}
	var git *os.File
	ok := false
	if rootNames[".git"] {
		if git, ok, err = open(".git"); err != nil {
			return out, err
		}
	}
	if ok {
		var st unix.Stat_t
		if err := unix.Fstat(int(git.Fd()), &st); err != nil {
			git.Close()
			return out, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// A gitdir pointer file: protected as a whole.
			if err := add(".git", true, git); err != nil {
				return out, err
			}
		} else {
			if err := add(".git", false, git); err != nil {
				return out, err
			}
			r.ensureGitPlaceholders(int(git.Fd()))
			gitNames, err := dirNames(int(git.Fd()))
			if err != nil {
				return out, errUnsafe("reading .git: %v", err)
			}
			// Opened relative to the .git just opened, so that .git and
			// its entries are one directory, whatever is renamed meanwhile.
			for _, name := range config.GitBehaviourFiles {
				if first, _, _ := strings.Cut(name, "/"); !gitNames[first] {
					continue
				}
				f, ok, err := openIn(int(git.Fd()), name, ".git/"+name)
				if err != nil {
					return out, err
				}
				if ok {
					if err := add(".git/"+name, true, f); err != nil {
						return out, err
					}
				}
			}
		}
	}
	closure := r.closure(ws)
	mounted := map[string]bool{}
	for _, rel := range r.rootProtected(rootNames) {
		if target, ok := closure.LinkTarget(rel); ok && target != rel {
			// A protected name that is a symlink inside the workspace:
			// its target is mounted below (host programs follow the
			// link); the link itself is judged in the changeset.
			continue
		}
		f, ok, err := open(rel)
		if err != nil {
			return out, err
		}
		if ok {
			if err := add(rel, true, f); err != nil {
				return out, err
			}
			mounted[rel] = true
		}
	}
	// The host-run closure: what a present trigger runs or loads
	// (core.hooksPath, the scripts hooks and hook managers name, the files
	// .envrc loads, a symlinked protected name's target), wherever it is.
	// A path below a symlink is left to the changeset check.
	for _, rel := range closure.Paths() {
		if rel == ".git" || strings.HasPrefix(rel, ".git/") || coveredBy(rel, mounted) || len(mounted) >= maxClosureMounts {
			continue
		}
		f, err := openBeneath(ws, rel)
		if err != nil {
			continue
		}
		if err := add(rel, true, f); err != nil {
			return out, err
		}
		mounted[rel] = true
	}
	return out, nil
}

// maxClosureMounts bounds the read-only mounts of a container; past it
// the changeset check alone covers the rest of the closure.
const maxClosureMounts = 64

// coveredBy reports whether rel is, or lies beneath, a mounted path.
func coveredBy(rel string, mounted map[string]bool) bool {
	for p := rel; p != "." && p != ""; p = path.Dir(p) {
		if mounted[p] {
			return true
		}
	}
	return false
}

// closure computes the host-run closure of the workspace through its
// descriptor (never by path), shallowly: this runs at every hand-over, and
// what lies deeper is judged in each call's changeset.
func (r *Runner) closure(ws int) *config.Closure {
	prot := r.cfg.Protection()
	root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", ws))
	if err != nil {
		return prot.Closure(nil, config.ClosureOptions{Workspace: r.workspace})
	}
	defer root.Close()
	return prot.Closure(root, config.ClosureOptions{Workspace: r.workspace, IsGitDir: r.isGitDir, Shallow: true})
}

// rootProtected lists the workspace-relative paths of sandbox.
// protected_paths to mount, given the names at the workspace root:
// patterns without glob characters whose first component exists, glob
// patterns of one component matched against the root's names.
func (r *Runner) rootProtected(rootNames map[string]bool) []string {
	seen := map[string]bool{}
	for _, p := range r.cfg.ProtectedPaths {
		p = path.Clean(strings.TrimPrefix(p, "/"))
		if p == ".git" || strings.HasPrefix(p, ".git/") {
			continue // handled with .git
		}
		if strings.ContainsAny(p, "*?[\\") {
			if strings.Contains(p, "/") {
				continue // deeper matches: the changeset check
			}
			for n := range rootNames {
				if ok, _ := path.Match(p, n); ok && n != ".git" {
					seen[n] = true
				}
			}
			continue
		}
		if first, _, _ := strings.Cut(p, "/"); rootNames[first] {
			seen[p] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// dirNames reads the names in the directory dirfd refers to (an O_PATH
// descriptor is reopened for reading, never by path).
func dirNames(dirfd int) (map[string]bool, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), ".")
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m, nil
}

// ensureGitPlaceholders creates .git/hooks and .git/info empty when
// missing, owned by the workspace owner, through the .git descriptor
// (never a path).
func (r *Runner) ensureGitPlaceholders(git int) {
	for _, name := range gitPlaceholders {
		if err := unix.Mkdirat(git, name, 0o755); err != nil {
			continue // exists (or cannot be made: then it is reverted if created)
		}
		_ = unix.Fchownat(git, name, r.uid, r.gid, unix.AT_SYMLINK_NOFOLLOW)
	}
}

// fingerprintOf summarizes the workspace-side sources of a container
// (protected paths of a writable one, socket masks of both); a warm
// container made for another fingerprint has stale read-only mounts and
// is discarded at hand-over (a freshness check, not a security one: init
// verifies what got mounted).
func fingerprintOf(srcs []bindSource) string {
	var b strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&b, "%s:%d:%d:%t%s;", s.target, s.dev, s.ino, s.ro, s.over)
	}
	return b.String()
}

// fingerprint is the current fingerprint of a container's mounts (ro:
// of the read-only flavour). Only the workspace side can change between a container's start
// and its hand-over (the init binary, the host toolchain and the caches
// are not the agent's), so only that side is opened: this runs at every
// hand-over.
func (r *Runner) fingerprint(ro bool) (string, error) {
	srcs, err := r.workspaceSources(ro)
	defer closeSources(srcs)
	if err != nil {
		return "", err
	}
	return fingerprintOf(srcs), nil
}

// dockerMounts turns opened (and maybe pinned) sources into Docker mounts.
func dockerMounts(srcs []bindSource) []mount.Mount {
	ms := make([]mount.Mount, 0, len(srcs))
	for _, b := range srcs {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: b.path, Target: b.target, ReadOnly: b.ro,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return ms
}

// workspaceSide is the part of srcs that workspaceSources opened (their
// targets lie in the workspace), in order.
func (r *Runner) workspaceSide(srcs []bindSource) []bindSource {
	var out []bindSource
	for _, b := range srcs {
		if config.Within(b.target, r.workspace) {
			out = append(out, b)
		}
	}
	return out
}
