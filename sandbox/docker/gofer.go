package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// Mount verification under gVisor (runsc).
//
// gVisor's Sentry serves every bind mount through the gofer, a host
// process of runsc that holds the mounts in its own mount namespace, as a
// fresh 9p file system: inside the container each mount point has a
// device of its own and inode 1, whatever the host object is. Init can
// still check the mount table the container sees (every mount asked for,
// none other, read-only where asked, no sockets, the right types) but not
// the identity of what is mounted.
//
// The identity is checked here instead, on the host, where it is real:
// the gofer's mount table (/proc/GOFER/mountinfo) must hold exactly the
// expected mount points, and the object at each of them, reached through
// the gofer's root (/proc/GOFER/root, walked with openat2 beneath it,
// never following a symlink), must be the device and inode agentbox
// opened and pinned. The container gets its request only after both
// checks pass; a failure removes it. This needs the privilege to read
// another root process's /proc entries (agentbox as root, as with the
// private engine): without it the container is refused, never trusted.
//
// The gofer is found as the child of the container's shim (the parent of
// the sandbox process the engine reports) whose argv[0] is runsc-gofer,
// whose bundle is this container's and which runs as root: a process in
// another container cannot be any of those. Its /proc directory is held
// open while it is read, so a recycled pid fails instead of lying.

// gvisorRuntime reports whether the engine's runtime named name is
// gVisor: its name or its program's name is runsc.
func gvisorRuntime(name, path string) bool {
	return name == "runsc" || filepath.Base(path) == "runsc"
}

// verifyGofer checks the identity of every mount of container id on the
// host, through its gofer.
func (r *Runner) verifyGofer(ctx context.Context, id string, want []initproc.ExpectedMount) error {
	ins, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("%w: inspecting the container: %w", sandbox.ErrUnavailable, err)
	}
	if ins.State == nil || ins.State.Pid <= 1 {
		return errUnsafe("gVisor container %s reports no sandbox process: its mounts cannot be verified", shortID(id))
	}
	proc, err := findGofer("/proc", ins.State.Pid, id)
	if err != nil {
		return errUnsafe("gVisor mount verification: %v", err)
	}
	defer proc.Close()
	if err := verifyThrough(proc, want); err != nil {
		return errUnsafe("gVisor mount verification (host side, through the gofer): %v", err)
	}
	return nil
}

// verifyThrough compares the mount table and mount-point objects of the
// process whose /proc directory is proc with want, identities included.
// Read-only flags are init's to check: the Sentry enforces them on its
// side of the gofer, and the gofer's own mounts stay writable.
func verifyThrough(proc *os.File, want []initproc.ExpectedMount) error {
	mi, err := openAt(proc, "mountinfo", unix.O_RDONLY)
	if err != nil {
		return err
	}
	table, err := initproc.ParseMountinfo(mi)
	mi.Close()
	if err != nil {
		return err
	}
	root, err := openAt(proc, "root", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer root.Close()
	host := make([]initproc.ExpectedMount, len(want))
	for i, w := range want {
		w.RO, w.HostID = false, false
		host[i] = w
	}
	return initproc.VerifyMounts(table, host, func(p string, st *unix.Stat_t) error {
		rel := strings.TrimPrefix(filepath.Clean(p), "/")
		if rel == "" {
			rel = "."
		}
		fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fstat(fd, st)
	})
}

// openAt opens name in the /proc directory dir (following the magic link
// for "root", which is the point).
func openAt(dir *os.File, name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", dir.Name(), name, err)
	}
	return os.NewFile(uintptr(fd), dir.Name()+"/"+name), nil
}

// findGofer returns the open /proc directory (under procRoot) of the
// gofer of container id, whose sandbox process is sandboxPID.
func findGofer(procRoot string, sandboxPID int, id string) (*os.File, error) {
	shim, _, err := procPPID(filepath.Join(procRoot, strconv.Itoa(sandboxPID)))
	if err != nil {
		return nil, fmt.Errorf("sandbox process %d: %w", sandboxPID, err)
	}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var found *os.File
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == sandboxPID {
			continue
		}
		dir, err := os.Open(filepath.Join(procRoot, e.Name()))
		if err != nil {
			continue
		}
		if isGofer(dir, shim, id) {
			if found != nil {
				found.Close()
				dir.Close()
				return nil, fmt.Errorf("more than one gofer for container %s", shortID(id))
			}
			found = dir
			continue
		}
		dir.Close()
	}
	if found == nil {
		return nil, fmt.Errorf("no gofer process found for container %s (shim %d)", shortID(id), shim)
	}
	return found, nil
}

// isGofer reports whether the process of /proc directory dir is the runsc
// gofer of container id under shim: its parent is the shim, its argv[0]
// runsc-gofer, its bundle directory the container's, and it runs as root.
func isGofer(dir *os.File, shim int, id string) bool {
	ppid, uid, err := procPPIDAt(dir)
	if err != nil || ppid != shim || uid != 0 {
		return false
	}
	f, err := openAt(dir, "cmdline", unix.O_RDONLY)
	if err != nil {
		return false
	}
	b := make([]byte, 64<<10)
	n, _ := f.Read(b)
	f.Close()
	args := strings.Split(strings.TrimRight(string(b[:n]), "\x00"), "\x00")
	if len(args) == 0 || args[0] != "runsc-gofer" {
		return false
	}
	for i, a := range args {
		bundle, ok := strings.CutPrefix(a, "--bundle=")
		if !ok && a == "--bundle" && i+1 < len(args) {
			bundle, ok = args[i+1], true
		}
		if ok && filepath.Base(bundle) == id {
			return true
		}
	}
	return false
}

// procPPID reads the parent pid and real uid of the process at /proc dir
// path p.
func procPPID(p string) (ppid, uid int, err error) {
	dir, err := os.Open(p)
	if err != nil {
		return 0, 0, err
	}
	defer dir.Close()
	return procPPIDAt(dir)
}

func procPPIDAt(dir *os.File) (ppid, uid int, err error) {
	f, err := openAt(dir, "status", unix.O_RDONLY)
	if err != nil {
		return 0, 0, err
	}
	b := make([]byte, 8<<10)
	n, _ := f.Read(b)
	f.Close()
	ppid, uid = -1, -1
	for _, line := range bytes.Split(b[:n], []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := strings.Fields(string(v))
		if len(f) == 0 {
			continue
		}
		switch string(k) {
		case "PPid":
			ppid, _ = strconv.Atoi(f[0])
		case "Uid":
			uid, _ = strconv.Atoi(f[0])
		}
	}
	if ppid < 0 || uid < 0 {
		return 0, 0, fmt.Errorf("%s/status: no PPid or Uid", dir.Name())
	}
	return ppid, uid, nil
}
