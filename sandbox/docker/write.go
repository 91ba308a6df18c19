package docker

import (
	"context"
	"fmt"
	"path"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// WriteFile writes one file through a warm read-write container: its
// init writes the content (streamed as Data frames) beneath the
// workspace, inside the container's mounts, so that every read-only
// mount refuses it as it would refuse a command (EROFS); no process is
// started. See sandbox.Runner and initproc.Write. Because nothing of the
// agent's ran in it, the container is then kept for the next writes (up
// to writerSlots such containers; a write takes one of them before a
// pool container), or goes back to the warm pool to serve the next
// request (a write, or a command), instead of being replaced: writes
// cost no container start, and do not wait for one when commands have
// drained the pool.
//
// With w.Gate set the write is gated (initproc.WriteReq.Gated): init
// writes and fsyncs its temporary file while the Runner waits for the
// gate, then the Runner sends the outcome as a Commit frame and init
// renames the file into place only if it commits. Init creates no
// directory before that: a write that needs one is answered Ungate and
// sent again, ungated, once the gate opened.
//
// Before handing it over, the Runner checks the path with the protection
// matcher (config.Protection): a protected path is refused with
// sandbox.ErrProtected unless w.ApprovedProtected is set. The check is on
// the path as given, which is exactly the path init writes: init follows
// no symlink on it.
func (r *Runner) WriteFile(ctx context.Context, w sandbox.FileWrite) error {
	rel, err := sandbox.NormalizeWrite(w, r.workspace)
	if err != nil {
		return err
	}
	if !w.ApprovedProtected {
		if why, ok := r.cfg.Protection().Match(rel, r.isGitDir); ok {
			return &sandbox.WriteError{Kind: sandbox.ErrProtected, Path: rel, Detail: why}
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return sandbox.ErrClosed
	}
	r.runs.Add(1)
	r.mu.Unlock()
	defer r.runs.Done()

	timeout := config.ClampTimeout(0, r.cfg.DefaultTimeout, r.cfg.MaxTimeout)
	req := initproc.Req{
		Workdir:   r.workspace,
		TimeoutMS: timeout.Milliseconds(),
		Write: &initproc.WriteReq{
			Root: r.workspace, Rel: rel, Mode: uint32(w.Mode.Perm()), Size: int64(len(w.Content)),
		},
	}
	if !utf8.ValidString(rel) {
		req.Write.RelBytes = []byte(rel)
	}
	req.Write.Gated = w.Gate != nil
	send := func(gate func() error) (sandbox.Result, *initproc.Status, error) {
		var temps []string
		res, st, err := r.exchange(ctx, req, exchange{data: w.Content, timeout: timeout, limit: 4096, workdir: r.workspace, reusable: true, gate: gate, temps: &temps})
		if err != nil || st == nil {
			// Init did not answer (killed: timeout, cancel, Close; or it
			// died, the OOM killer's pick): it may have left its
			// temporary file behind.
			for _, t := range temps {
				r.removeTemp(rel, t)
			}
		}
		return res, st, err
	}
	res, st, err := send(w.Gate)
	if err == nil && st != nil && st.Ungate {
		// A parent directory is missing: init creates none before the
		// gate opens, and by then the content had gone. The gate is open
		// now (init read its Commit): send the write again, ungated.
		req.Write.Gated = false
		res, st, err = send(nil)
	}
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("container %s: writing %s: init ended without a status (exit %d)", shortID(res.ContainerID), rel, res.ExitCode)
	}
	if st.Code == 0 {
		return nil
	}
	r.log.Debug("write refused", "container", shortID(res.ContainerID), "path", rel, "err", st.Error)
	p := st.ErrPath
	if p == "" {
		p = rel
	}
	return &sandbox.WriteError{Kind: sandbox.WriteErrorKind(st.Errno), Path: p, Errno: st.Errno, Detail: st.Error}
}

// isGitDir reports whether dir (workspace-relative) looks like a git
// directory (it has HEAD, objects or refs), looked up beneath the
// workspace without following symlinks, for the protection matcher.
func (r *Runner) isGitDir(dir string) bool {
	ws, err := r.dupWorkspace()
	if err != nil {
		return false
	}
	defer ws.Close()
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if f, err := openBeneath(int(ws.Fd()), path.Join(dir, name)); err == nil {
			f.Close()
			return true
		}
	}
	return false
}

// removeTemp removes the temporary file named temp that a write to rel
// may have left in rel's directory when its container died before init
// answered. The directory is resolved beneath the workspace without
// following any symlink, and only that name is unlinked (a directory of
// that name is left alone): the name is random and was only ever sent to
// that init.
func (r *Runner) removeTemp(rel, temp string) {
	ws, err := r.dupWorkspace()
	if err != nil {
		return
	}
	defer ws.Close()
	dirfd := int(ws.Fd())
	if d := path.Dir(rel); d != "." {
		f, err := openBeneath(dirfd, d)
		if err != nil {
			return // no such directory (init created none), or not safely reachable
		}
		defer f.Close()
		dirfd = int(f.Fd())
	}
	if err := unix.Unlinkat(dirfd, temp, 0); err == nil {
		r.log.Debug("removed the temporary file of a write that did not finish", "path", path.Join(path.Dir(rel), temp))
	}
}
