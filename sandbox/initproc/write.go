package initproc

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// WriteReq asks init to write one file beneath the workspace, in place of
// running a command. The content follows the request as Data frames.
//
// Init writes it inside the container's mount namespace, so every
// read-only mount there (a protected path, a read-only workspace) refuses
// it with EROFS exactly as it refuses a shell command. Init applies no
// policy of its own beyond the path rules of Write; the executor checks
// the protection matcher before it hands the request over.
type WriteReq struct {
	// Root is the workspace's absolute path (the same inside the
	// container as on the host).
	Root string `json:"root"`
	// Rel is the file's slash-separated path beneath Root: relative,
	// clean, no "." or ".." component.
	Rel string `json:"rel"`
	// RelBytes carries Rel when it is not valid UTF-8 (JSON strings
	// cannot); it takes precedence over Rel.
	RelBytes []byte `json:"rel_bytes,omitempty"`
	// Mode holds the permission bits of a new file; an existing file
	// keeps its own.
	Mode uint32 `json:"mode"`
	// Size is the content's length; content of any other length is
	// refused and nothing is written.
	Size int64 `json:"size"`
	// Temp names the temporary file (a single name as TempName makes;
	// empty: init picks one). The executor picks it so that it
	// can remove the file itself when the container dies mid-write.
	Temp string `json:"temp,omitempty"`
	// Gated: a Commit frame follows the content, and the file (or any
	// directory) becomes visible only if it commits. The temporary file
	// is written and fsynced meanwhile, so that the executor's own wait
	// (the snapshot's pending record reaching the disk) overlaps it.
	Gated bool `json:"gated,omitempty"`
}

// WriteError is a refused or failed write.
type WriteError struct {
	// Op is the step that failed ("open", "mkdir", "write", "rename", …).
	Op string
	// Path is the workspace-relative path the error concerns: the file,
	// or the parent directory (a symlink, a file in the way) at fault.
	Path string
	// Errno is the system error, 0 for a refusal of init's own.
	Errno unix.Errno
	// Msg says what went wrong, for the executor's log and error.
	Msg string
}

func (e *WriteError) Error() string {
	if e.Errno != 0 {
		return fmt.Sprintf("%s %s: %s (%s)", e.Op, e.Path, e.Msg, unix.ErrnoName(e.Errno))
	}
	return fmt.Sprintf("%s %s: %s", e.Op, e.Path, e.Msg)
}

// Unwrap returns the errno, for errors.Is(err, unix.EROFS).
func (e *WriteError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

func writeErr(op, rel string, err error) *WriteError {
	var en unix.Errno
	if !errors.As(err, &en) {
		return &WriteError{Op: op, Path: rel, Msg: err.Error()}
	}
	msg := en.Error()
	switch en {
	case unix.ELOOP:
		msg = "is a symbolic link"
	case unix.EXDEV:
		msg = "resolves outside the workspace"
	case unix.EROFS:
		msg = "is on a read-only mount"
	}
	return &WriteError{Op: op, Path: rel, Errno: en, Msg: msg}
}

// resolveBeneath is how every path component is opened: beneath the
// directory, never through a symlink of any kind. Mounts may be crossed:
// a read-only mount on the way must be reached to refuse the write.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// tempPrefix starts the name of every write's temporary file (of writes
// in progress).
const tempPrefix = ".agentbox-write-"

// TempName returns a fresh, unpredictable temporary file name.
func TempName() string { return tempPrefix + rand.Text()[:16] }

// validTemp reports whether name is a temporary file name init accepts:
// tempPrefix and up to 32 letters, digits, '-' or '_'.
func validTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok || rest == "" || len(rest) > 32 {
		return false
	}
	for _, c := range rest {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Write writes content to req.Rel beneath req.Root, atomically: missing
// parent directories are created one component at a time (mode 0755
// before the umask), each opened beneath the one before (openAt: openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or openat O_NOFOLLOW of a single
// name where seccomp hides openat2) and never through a symlink; the content goes to a temporary file in the
// same directory, which gets the mode (an existing file's, else
// req.Mode), is fsynced and renamed over the target.
//
// A symlink anywhere on the path is refused (ELOOP), the final component
// included: Write never writes through a link, and replaces no link
// either (the Write tool refuses symlink targets too). Should a link
// appear in its place between that check and the rename, the rename
// replaces the link itself, never the file it points to. Hard links are
// never written through: the rename gives the path a new inode.
//
// Run inside the container, so that the container's mounts apply; unit
// tests run it on the host.
func Write(req WriteReq, content io.Reader) *WriteError {
	return WriteGated(req, content, nil)
}

// errUngate marks a gated write that found a parent directory missing.
const errUngate = "parent directory missing: the write is sent again, ungated"

// WriteGated is Write for a gated request (WriteReq.Gated): gate, called
// once the content is in the fsynced temporary file and before anything
// becomes visible, reports whether the write may go ahead. A missing
// parent directory, which must not be created before that, ends the
// write with nothing written once gate is passed (Op "gate", for
// Status.Ungate). A nil gate is Write.
func WriteGated(req WriteReq, content io.Reader, gate func() error) *WriteError {
	if req.RelBytes != nil {
		req.Rel = string(req.RelBytes)
	}
	comps, err := splitRel(req.Rel)
	if err != nil {
		return &WriteError{Op: "check", Path: req.Rel, Msg: err.Error()}
	}
	if req.Temp != "" && !validTemp(req.Temp) {
		return &WriteError{Op: "check", Path: req.Rel, Msg: "not a temporary file name"}
	}
	root, err := unix.Open(req.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return writeErr("open workspace", ".", err)
	}
	dir := root
	defer func() { unix.Close(dir) }()
	for i, c := range comps[:len(comps)-1] {
		rel := strings.Join(comps[:i+1], "/")
		fd, err := openDir(dir, c)
		if errors.Is(err, unix.ENOENT) && gate != nil {
			if err := gate(); err != nil {
				return withdrawn(req.Rel, err)
			}
			return &WriteError{Op: "gate", Path: rel, Msg: errUngate}
		}
		if errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(dir, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return writeErr("mkdir", rel, err)
			}
			fd, err = openDir(dir, c)
		}
		if err != nil {
			return writeErr("open", rel, err)
		}
		unix.Close(dir)
		dir = fd
	}
	name := comps[len(comps)-1]
	mode := req.Mode & 0o777
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return writeErr("stat", req.Rel, err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &WriteError{Op: "open", Path: req.Rel, Errno: unix.ELOOP, Msg: "is a symbolic link"}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return &WriteError{Op: "open", Path: req.Rel, Errno: unix.EISDIR, Msg: "is a directory"}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &WriteError{Op: "open", Path: req.Rel, Errno: unix.EINVAL, Msg: "is not a regular file"}
	default:
		mode = st.Mode & 0o777
	}

	tmp, f, err := createTemp(dir, req.Temp)
	if err != nil {
		return writeErr("create", req.Rel, err)
	}
	done := false
	defer func() {
		if !done {
			if f != nil {
				f.Close()
			}
			unix.Unlinkat(dir, tmp, 0)
		}
	}()
	n, err := copyContent(f, content)
	switch {
	case err != nil && errors.Is(err, errRead):
		return &WriteError{Op: "receive", Path: req.Rel, Msg: err.Error()}
	case err != nil:
		return writeErr("write", req.Rel, err)
	case n != req.Size:
		return &WriteError{Op: "receive", Path: req.Rel, Msg: fmt.Sprintf("content is %d bytes, expected %d", n, req.Size)}
	}
	if err := f.Chmod(os.FileMode(mode)); err != nil {
		return writeErr("chmod", req.Rel, err)
	}
	if err := f.Sync(); err != nil {
		return writeErr("fsync", req.Rel, err)
	}
	err = f.Close()
	f = nil
	if err != nil {
		return writeErr("close", req.Rel, err)
	}
	if gate != nil {
		if err := gate(); err != nil {
			return withdrawn(req.Rel, err)
		}
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		return writeErr("rename", req.Rel, err)
	}
	done = true
	return nil
}

// withdrawn is the error of a write whose gate did not open.
func withdrawn(rel string, err error) *WriteError {
	return &WriteError{Op: "commit", Path: rel, Msg: "withdrawn: " + err.Error()}
}

// runWrite is WriteGated as a request: its status.
func runWrite(req WriteReq, content io.Reader, gate func() error) Status {
	werr := WriteGated(req, content, gate)
	if werr == nil {
		return Status{}
	}
	st := Status{Code: 1, Error: werr.Error(), ErrPath: werr.Path, Ungate: werr.Op == "gate"}
	if werr.Errno != 0 {
		st.Errno = unix.ErrnoName(werr.Errno)
	}
	return st
}

// splitRel checks rel and returns its components.
func splitRel(rel string) ([]string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.IndexByte(rel, 0) >= 0 {
		return nil, errors.New("not a relative path beneath the workspace")
	}
	comps := strings.Split(rel, "/")
	for _, c := range comps {
		if c == "" || c == "." || c == ".." {
			return nil, errors.New("not a clean path beneath the workspace")
		}
	}
	return comps, nil
}

// noOpenat2 is set once openat2 was found unusable. agentbox's seccomp
// profile denies it in every sandbox container (it carries its mode where
// seccomp cannot check it; see sandbox/docker/seccomp.go): with ENOSYS
// under runc and Podman, with EPERM under gVisor, whose --oci-seccomp
// (Debian's 2022 runsc) ignores the profile's errnoRet. Inside a container
// init therefore resolves with openat, one name at a time.
var noOpenat2 atomic.Bool

// openat2Denied reports whether openat2 itself is refused: it probes with
// a plain O_PATH open of "/", which no permission check can refuse, so
// that an EPERM of the call told apart from an EPERM of the file.
var openat2Denied = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err != nil {
		return true
	}
	unix.Close(fd)
	return false
})

// openAt opens the single path component name (no slash, not "." or
// "..") in dir without following a symlink: with openat2 beneath dir
// where the kernel has it, else with openat and O_NOFOLLOW. Both resolve
// exactly one name and refuse a symlink (ELOOP), so they contain alike:
// falling back is never weaker.
func openAt(dir int, name string, flags int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolveBeneath})
		if err != unix.ENOSYS && (err != unix.EPERM || !openat2Denied()) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	for {
		fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openDir opens the directory name in dir (O_PATH). A symlink is ELOOP.
func openDir(dir int, name string) (int, error) {
	fd, err := openAt(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOTDIR {
		// O_PATH|O_NOFOLLOW opens a symlink itself, and O_DIRECTORY then
		// refuses it as ENOTDIR: say what it is.
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, unix.ELOOP
		}
	}
	return fd, err
}

// createTemp creates a new, empty, private file in dir, named name (a
// name of its own when empty).
func createTemp(dir int, name string) (string, *os.File, error) {
	for range 10 {
		try := name
		if try == "" {
			try = TempName()
		}
		fd, err := openAt(dir, try, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) && name == "" {
			continue // a name of its own: try another
		}
		if err != nil {
			return "", nil, err
		}
		return try, os.NewFile(uintptr(fd), try), nil
	}
	return "", nil, unix.EEXIST
}

// errRead marks a failure of the content stream (not of the file).
var errRead = errors.New("content stream")

func copyContent(f *os.File, r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := r.Read(buf)
		if m > 0 {
			if _, werr := f.Write(buf[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%w: %w", errRead, err)
		}
	}
}

// commitGate reads the Commit frame that follows a gated write's content,
// once.
type commitGate struct {
	in      io.Reader
	content io.Reader
	read    bool
	err     error
	// broken: the stream is out of step (no Commit frame where one
	// belongs): the container serves no other request.
	broken bool
}

// wait drains what is left of the content and reads the Commit frame: nil
// when it commits, an error when it withdraws the write or the stream
// fails.
func (g *commitGate) wait() error {
	if g.read {
		return g.err
	}
	g.read = true
	if _, err := io.Copy(io.Discard, g.content); err != nil {
		g.err, g.broken = err, true
		return g.err
	}
	t, p, err := ReadFrame(g.in)
	switch {
	case err != nil:
		g.err, g.broken = err, true
	case t != Commit:
		g.err, g.broken = fmt.Errorf("%w: got %q, want commit", ErrFrame, t), true
	case len(p) > 0:
		g.err = errors.New(string(p)) // the executor's reason
	}
	return g.err
}
