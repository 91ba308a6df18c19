package docker

import (
	"context"
	"fmt"
	"path"
	"unicode/utf8"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// WriteFile writes one file through a warm read-write container: its
// init writes the content (streamed as Data frames) beneath the
// workspace, inside the container's mounts, so that every read-only
// mount refuses it as it would refuse a command (EROFS); no process is
// started. See sandbox.Runner and initproc.Write. Because nothing of the
// agent's ran in it, the container then goes back to the warm pool and
// serves the next request (a write, or a command) instead of being
// replaced: writes cost no container start.
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
		return fmt.Errorf("%w: %v", sandbox.ErrCanceled, context.Cause(ctx))
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return sandbox.ErrClosed
	}
	r.runs.Add(1)
	r.mu.Unlock()
	defer r.runs.Done()

	timeout := min(r.cfg.DefaultTimeout, r.cfg.MaxTimeout)
	if timeout <= 0 {
		timeout = config.DefaultTimeout
	}
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
	res, st, err := r.exchange(ctx, req, exchange{data: w.Content, timeout: timeout, limit: 4096, workdir: r.workspace, reusable: true, gate: w.Gate})
	if err == nil && st != nil && st.Ungate {
		// A parent directory is missing: init creates none before the
		// gate opens, and by then the content had gone. The gate is open
		// now (init read its Commit): send the write again, ungated.
		req.Write.Gated = false
		res, st, err = r.exchange(ctx, req, exchange{data: w.Content, timeout: timeout, limit: 4096, workdir: r.workspace, reusable: true})
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
