package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/classifier"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/permission"
)

// This file is the seam between tools and the domain packages: the only
// place their types and errors are translated to the tools' own.

// classifierFunc adapts classifier.Classify to the pipeline.
func classifierFunc(opts ...classifier.Option) tools.ClassifyFunc {
	return func(ctx context.Context, cmd string) tools.Verdict {
		return fromClassifier(classifier.Classify(cmd, opts...))
	}
}

// fromClassifier converts a classifier verdict to the tools' Verdict.
func fromClassifier(v classifier.Verdict) tools.Verdict {
	out := tools.Verdict{Class: string(v.Class), Commands: v.Commands, Prefix: v.Prefix}
	for _, r := range v.Reads {
		out.Reads = append(out.Reads, permission.Read{Pattern: r.Pattern, RunTime: r.RunTime})
	}
	for _, p := range v.Parts {
		out.Parts = append(out.Parts, tools.Part{Argv: p.Argv, Class: string(p.Class), Prefix: p.Prefix})
	}
	for _, r := range v.Reasons {
		out.Reasons = append(out.Reasons, tools.Reason{Rule: r.Rule, Text: r.Text, Offset: r.Offset, Message: r.Message})
	}
	return out
}

// sandboxRunner adapts a sandbox.Runner to tools.Sandbox.
type sandboxRunner struct {
	Runner sandbox.Runner
}

// SandboxFor is r as a tool sees it: requests, results and errors
// translated exactly as for a workspace's own runner. Tests run the
// built-in tools on sandboxtest.Fake through it.
func SandboxFor(r sandbox.Runner) tools.Sandbox { return sandboxRunner{Runner: r} }

func toSpec(req tools.ExecRequest) sandbox.Spec {
	spec := sandbox.Spec{
		Argv:      req.Argv,
		Shell:     req.Command,
		Workdir:   req.Dir,
		Env:       req.Env,
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		OutputCap: req.OutputLimit,
		ReadOnly:  req.ReadOnly,
		Call:      req.Call,
		Session:   req.Session,
	}
	if req.OnOutput != nil {
		on := req.OnOutput
		spec.OnOutput = func(s sandbox.Stream, p []byte) {
			on(tools.Chunk{Stream: s.String(), Data: append([]byte(nil), p...)})
		}
	}
	return spec
}

func fromResult(r sandbox.Result) tools.ExecResult {
	return tools.ExecResult{
		ExitCode:      r.ExitCode,
		Stdout:        string(r.Stdout),
		Stderr:        string(r.Stderr),
		StdoutDropped: r.StdoutDropped,
		StderrDropped: r.StderrDropped,
		Dir:           r.Cwd,
		TimedOut:      r.TimedOut,
		Killed:        r.Killed,
		OOMKilled:     r.OOMKilled,
		Duration:      r.Duration,
		ContainerID:   r.ContainerID,
	}
}

// unsafeReason is why the sandbox refused the workspace, for a person.
func unsafeReason(err error) string {
	return strings.TrimPrefix(err.Error(), sandbox.ErrUnsafeWorkspace.Error()+": ")
}

// sandboxError turns a sandbox error into a model-facing one.
func sandboxError(err error) error {
	switch {
	case errors.Is(err, sandbox.ErrInvalidSpec):
		return tools.Errorf(tools.ErrValidation, "the command cannot be run: %v", err)
	case errors.Is(err, sandbox.ErrNoEgress):
		return &tools.ToolError{Kind: tools.ErrInternal, Message: "nothing was run: with network.mode: allowlist a sandboxed command's only way out is " +
			"agentbox's egress proxy, and it could not start (" + egressCause(err) + "); commands never run without it. " +
			"The operator can fix that (see agentbox's log) or set network.mode: none"}
	case errors.Is(err, sandbox.ErrUnsafeWorkspace):
		// Before ErrUnavailable: starting an engine would not help.
		return tools.Errorf(tools.ErrPermissionDenied, "the sandbox refused to run in this workspace, so nothing was run: %s. Only a person can fix this: retrying before they have will not help", unsafeReason(err))
	case errors.Is(err, sandbox.ErrUnavailable):
		msg := "the sandbox is unavailable, so nothing was run"
		// The reason, without the sentinel's own words (which say the same).
		if why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()+": "), sandbox.ErrUnavailable.Error()+": "); why != "" && why != sandbox.ErrUnavailable.Error() {
			msg += ": " + why
		}
		return &tools.ToolError{Kind: tools.ErrInternal, Message: msg + ". The operator can see what to fix with `agentbox doctor` (for a missing engine, `agentbox engine start`)."}
	case errors.Is(err, sandbox.ErrClosed):
		return tools.Errorf(tools.ErrInternal, "the sandbox was shut down")
	case errors.Is(err, sandbox.ErrNotFound):
		return tools.Errorf(tools.ErrNotFound, "no such background shell")
	}
	return err
}

// Exec implements tools.Sandbox. A command killed for its timeout is a result
// (TimedOut set), not an error; a cancelled one returns tools.ErrTimeout.
func (s sandboxRunner) Exec(ctx context.Context, req tools.ExecRequest) (tools.ExecResult, error) {
	r, err := s.Runner.Run(ctx, toSpec(req))
	if err != nil {
		if errors.Is(err, sandbox.ErrTimeout) {
			res := fromResult(r)
			res.TimedOut = true
			return res, nil
		}
		if errors.Is(err, sandbox.ErrCanceled) {
			return fromResult(r), tools.Errorf(tools.ErrTimeout, "the command was cancelled and killed")
		}
		return fromResult(r), sandboxError(err)
	}
	return fromResult(r), nil
}

// WriteFile implements tools.Sandbox.
func (s sandboxRunner) WriteFile(ctx context.Context, req tools.WriteRequest) error {
	err := s.Runner.WriteFile(ctx, sandbox.FileWrite{
		Path: req.Path, Content: req.Data, Mode: req.Mode, ApprovedProtected: req.ApprovedProtected,
		Gate: req.Gate,
	})
	if err == nil {
		return nil
	}
	return sandboxWriteError(req, err)
}

// sandboxWriteError turns an error of sandbox.Runner.WriteFile for req
// into a model-facing one.
func sandboxWriteError(req tools.WriteRequest, err error) error {
	var we *sandbox.WriteError
	if !errors.As(err, &we) {
		switch {
		case errors.Is(err, sandbox.ErrTimeout):
			return tools.Errorf(tools.ErrTimeout, "writing %s timed out", req.Path)
		case errors.Is(err, sandbox.ErrCanceled):
			return tools.Errorf(tools.ErrTimeout, "writing %s was cancelled", req.Path)
		}
		return sandboxError(err)
	}
	// The path at fault, as the model knows paths: absolute.
	at := req.Path
	if we.Path != "" && we.Path != req.Rel {
		at = filepath.Join(strings.TrimSuffix(req.Path, req.Rel), filepath.FromSlash(we.Path))
	}
	switch {
	case errors.Is(we, sandbox.ErrProtected):
		return tools.Errorf(tools.ErrPermissionDenied, "agentbox refused to write %s: %s. Changing a protected path needs a person's approval.", req.Path, we.Detail)
	case errors.Is(we, sandbox.ErrReadOnly):
		return tools.Errorf(tools.ErrPermissionDenied, "cannot write %s: it is protected and read-only in the sandbox (git metadata, or a path in sandbox.protected_paths such as .vscode or .envrc), so that nothing the agent does can change what host programs run. Ask the user to make this change.", req.Path)
	case errors.Is(we, sandbox.ErrSymlink) && we.Errno == "EXDEV":
		return tools.Errorf(tools.ErrValidation, "cannot write %s: %s resolves outside the workspace", req.Path, at)
	case errors.Is(we, sandbox.ErrSymlink):
		return tools.Errorf(tools.ErrValidation, "cannot write %s: %s is a symbolic link, and agentbox never writes through one; write the file at its real path instead", req.Path, at)
	case errors.Is(we, sandbox.ErrNoSpace) && we.Errno == "EFBIG":
		return tools.Errorf(tools.ErrExecution, "cannot write %s: the content (%d bytes) is larger than the sandbox's file size limit (sandbox.file_size_mb)", req.Path, len(req.Data))
	case errors.Is(we, sandbox.ErrNoSpace):
		return tools.Errorf(tools.ErrExecution, "cannot write %s: no space left on the device (or the disk quota is used up)", req.Path)
	}
	switch we.Errno {
	case "ENOTDIR":
		return tools.Errorf(tools.ErrValidation, "cannot write %s: %s is not a directory", req.Path, at)
	case "EISDIR":
		return tools.Errorf(tools.ErrValidation, "cannot write %s: it is a directory", req.Path)
	case "EINVAL":
		return tools.Errorf(tools.ErrValidation, "cannot write %s: %s is not a regular file", req.Path, at)
	case "ENAMETOOLONG":
		return tools.Errorf(tools.ErrValidation, "cannot write %s: the name is too long", req.Path)
	case "EACCES", "EPERM":
		return tools.Errorf(tools.ErrPermissionDenied, "cannot write %s: the file system denies it (permissions of %s)", req.Path, at)
	}
	return tools.Errorf(tools.ErrExecution, "writing %s failed: %s", req.Path, tools.TrimDetail(we.Detail))
}

// sandboxJobs translates lazyJobs' calls to sandbox.Jobs (lazyJobs adds
// the journaling of tools.Jobs).
type sandboxJobs struct {
	Jobs sandbox.Jobs
}

// Start starts spec as a sandbox job.
func (j sandboxJobs) Start(ctx context.Context, req tools.ExecRequest) (string, error) {
	id, err := j.Jobs.Start(ctx, toSpec(req))
	if err != nil {
		return "", sandboxError(err)
	}
	return id, nil
}

// Read returns the job's new output and state.
func (j sandboxJobs) Read(ctx context.Context, id string) (tools.JobStatus, error) {
	out, err := j.Jobs.Output(id)
	if err != nil {
		return tools.JobStatus{ID: id}, sandboxError(err)
	}
	st := tools.JobStatus{ID: id, Running: !out.Done, Stdout: string(out.Stdout), Stderr: string(out.Stderr)}
	if out.Result != nil {
		st.ExitCode = out.Result.ExitCode
		st.ContainerID = out.Result.ContainerID
	}
	return st, nil
}

// Kill kills the job and returns its last output.
func (j sandboxJobs) Kill(ctx context.Context, id string) (tools.JobStatus, error) {
	if err := j.Jobs.Kill(ctx, id); err != nil {
		return tools.JobStatus{ID: id}, sandboxError(err)
	}
	return j.Read(ctx, id)
}

// snapshotStore adapts a snapshot.Store to tools.Snapshotter.
type snapshotStore struct {
	Store *snapshot.Store
}

// Begin implements tools.Snapshotter: a single file is snapshotted alone,
// several files or the workspace as a whole.
func (s snapshotStore) Begin(ctx context.Context, info tools.SnapshotInfo, scope tools.Scope) (tools.SnapshotCall, error) {
	sc := snapshot.Whole()
	if scope.Kind == tools.ScopeFiles && len(scope.Paths) == 1 {
		sc = snapshot.File(scope.Paths[0])
		sc.Staged = info.Staged
	}
	call, err := s.Store.Begin(ctx, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary}, sc)
	if err != nil {
		return nil, snapshotError(err)
	}
	if info.Keep != nil {
		call.SetKeep(keepFunc(info.Keep))
	}
	return snapCall{call}, nil
}

// BeginDetached implements tools.DetachedSnapshotter (see snapshot.Detached).
func (s snapshotStore) BeginDetached(ctx context.Context, info tools.SnapshotInfo) (tools.SnapshotCall, error) {
	d, err := s.Store.BeginDetached(ctx, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary})
	if err != nil {
		return nil, snapshotError(err)
	}
	if info.Keep != nil {
		d.SetKeep(keepFunc(info.Keep))
	}
	return snapDetached{d}, nil
}

// snapshotError translates the store's limit errors (snapshot.LimitError)
// to the pipeline's (tools.SnapshotLimitError); others pass unchanged.
func snapshotError(err error) error {
	var le *snapshot.LimitError
	if !errors.As(err, &le) {
		return err
	}
	limit := tools.ErrSnapshotNoSpace
	if errors.Is(err, snapshot.ErrTooLarge) {
		limit = tools.ErrSnapshotTooLarge
	}
	return &tools.SnapshotLimitError{Err: limit, Path: le.Path, Cause: err}
}

// undoError translates the store's undo errors to the tools' ones.
func undoError(err error) error {
	var ce *snapshot.ConflictError
	switch {
	case errors.As(err, &ce):
		out := &tools.UndoConflictError{ID: ce.ID, Cause: err}
		for _, c := range ce.Conflicts {
			out.Conflicts = append(out.Conflicts, tools.UndoConflict{Path: c.Path, Reason: c.Reason, By: c.By})
		}
		return out
	case errors.Is(err, snapshot.ErrNotFound):
		return kindError{err.Error(), tools.ErrNoEntry}
	case strings.Contains(err.Error(), "nothing to undo"):
		return kindError{strings.TrimPrefix(err.Error(), "snapshot: "), tools.ErrNothingToUndo}
	}
	return err
}

// kindError keeps the store's message under one of the tools' sentinels.
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.kind }

type snapDetached struct{ d *snapshot.Detached }

func (s snapDetached) Finish(ctx context.Context) (tools.JournalEntry, error) {
	e, err := s.d.Finish(ctx)
	if err != nil {
		return tools.JournalEntry{}, err
	}
	return journalEntry(e), nil
}

func (s snapDetached) Abort(ctx context.Context) error { return s.d.Abort(ctx) }

func journalEntry(e snapshot.Entry) tools.JournalEntry {
	out := tools.JournalEntry{ID: e.ID, Changes: make([]tools.Change, 0, len(e.Changes)), RevertError: e.RevertError,
		Time: e.Time, Session: e.Session, Tool: e.Tool, Summary: e.Summary, Kind: string(e.Kind), Reverts: e.Reverts}
	for _, c := range e.Changes {
		out.Changes = append(out.Changes, tools.Change{Path: c.Path, Op: string(c.Op)})
	}
	for _, r := range e.Reverted {
		out.Reverted = append(out.Reverted, tools.ProtectedChange{Path: r.Path, Op: string(r.Op), Reason: r.Reason})
	}
	return out
}

func keepFunc(keep func(context.Context, []tools.ProtectedChange) []string) snapshot.KeepFunc {
	return func(ctx context.Context, ps []snapshot.Protected) []string {
		in := make([]tools.ProtectedChange, 0, len(ps))
		for _, p := range ps {
			pc := tools.ProtectedChange{Path: p.Path, Op: string(p.Op), Reason: p.Reason}
			if p.New != nil && p.New.Type == snapshot.TypeFile {
				pc.Hash = p.New.Hash
			}
			in = append(in, pc)
		}
		return keep(ctx, in)
	}
}

type snapCall struct{ c *snapshot.Call }

func (s snapCall) Finish(ctx context.Context) (tools.JournalEntry, error) {
	e, err := s.c.Finish(ctx)
	if err != nil {
		return tools.JournalEntry{}, err
	}
	return journalEntry(e), nil
}

func (s snapCall) Abort(ctx context.Context) error { return s.c.Abort(ctx) }

// Gate implements tools.StagedSnapshot.
func (s snapCall) Gate() func(context.Context) error {
	if !s.c.Staged() {
		return nil
	}
	return s.c.Durable
}

// egressCause is what an ErrNoEgress error says after the sentinel.
func egressCause(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, sandbox.ErrNoEgress.Error()+": "); ok {
		return after
	}
	return msg
}
