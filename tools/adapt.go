package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/classifier"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/snapshot"
)

// ClassifierFunc adapts classifier.Classify to the pipeline.
func ClassifierFunc(opts ...classifier.Option) ClassifyFunc {
	return func(ctx context.Context, cmd string) Verdict {
		return FromClassifier(classifier.Classify(cmd, opts...))
	}
}

// FromClassifier converts a classifier verdict.
func FromClassifier(v classifier.Verdict) Verdict {
	out := Verdict{Class: string(v.Class), Commands: v.Commands, Prefix: v.Prefix}
	for _, r := range v.Reasons {
		out.Reasons = append(out.Reasons, Reason{Rule: r.Rule, Text: r.Text, Offset: r.Offset, Message: r.Message})
	}
	return out
}

// SandboxRunner adapts a sandbox.Runner to Sandbox.
type SandboxRunner struct {
	Runner sandbox.Runner
}

func toSpec(req ExecRequest) sandbox.Spec {
	spec := sandbox.Spec{
		Argv:      req.Argv,
		Shell:     req.Command,
		Workdir:   req.Dir,
		Env:       req.Env,
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		OutputCap: req.OutputLimit,
		ReadOnly:  req.ReadOnly,
	}
	if req.OnOutput != nil {
		on := req.OnOutput
		spec.OnOutput = func(s sandbox.Stream, p []byte) {
			on(Chunk{Stream: s.String(), Data: append([]byte(nil), p...)})
		}
	}
	return spec
}

func fromResult(r sandbox.Result) ExecResult {
	return ExecResult{
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

// SandboxError turns a sandbox error into a model-facing one.
func SandboxError(err error) error {
	switch {
	case errors.Is(err, sandbox.ErrInvalidSpec):
		return Errorf(ErrValidation, "the command cannot be run: %v", err)
	case errors.Is(err, sandbox.ErrUnavailable):
		return fmt.Errorf("%w", &ToolError{Kind: ErrInternal, Message: "the sandbox is unavailable, so nothing was run; the operator can start it with `agentbox engine start` (see `agentbox doctor`)"})
	case errors.Is(err, sandbox.ErrUnsafeWorkspace):
		return Errorf(ErrPermissionDenied, "the sandbox refused to run in this workspace: %v", err)
	case errors.Is(err, sandbox.ErrClosed):
		return Errorf(ErrInternal, "the sandbox was shut down")
	case errors.Is(err, sandbox.ErrNotFound):
		return Errorf(ErrNotFound, "no such background shell")
	}
	return err
}

// Exec implements Sandbox. A command killed for its timeout is a result
// (TimedOut set), not an error; a cancelled one returns ErrTimeout.
func (s SandboxRunner) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	r, err := s.Runner.Run(ctx, toSpec(req))
	if err != nil {
		if errors.Is(err, sandbox.ErrTimeout) {
			res := fromResult(r)
			res.TimedOut = true
			return res, nil
		}
		if errors.Is(err, sandbox.ErrCanceled) {
			return fromResult(r), Errorf(ErrTimeout, "the command was cancelled and killed")
		}
		return fromResult(r), SandboxError(err)
	}
	return fromResult(r), nil
}

// WriteFile implements Sandbox.
func (s SandboxRunner) WriteFile(ctx context.Context, req WriteRequest) error {
	err := s.Runner.WriteFile(ctx, sandbox.FileWrite{
		Path: req.Path, Content: req.Data, Mode: req.Mode, ApprovedProtected: req.ApprovedProtected,
	})
	if err == nil {
		return nil
	}
	return SandboxWriteError(req, err)
}

// SandboxWriteError turns an error of sandbox.Runner.WriteFile for req
// into a model-facing one.
func SandboxWriteError(req WriteRequest, err error) error {
	var we *sandbox.WriteError
	if !errors.As(err, &we) {
		switch {
		case errors.Is(err, sandbox.ErrTimeout):
			return Errorf(ErrTimeout, "writing %s timed out", req.Path)
		case errors.Is(err, sandbox.ErrCanceled):
			return Errorf(ErrTimeout, "writing %s was cancelled", req.Path)
		}
		return SandboxError(err)
	}
	// The path at fault, as the model knows paths: absolute.
	at := req.Path
	if we.Path != "" && we.Path != req.Rel {
		at = filepath.Join(strings.TrimSuffix(req.Path, req.Rel), filepath.FromSlash(we.Path))
	}
	switch {
	case errors.Is(we, sandbox.ErrProtected):
		return Errorf(ErrPermissionDenied, "agentbox refused to write %s: %s. Changing a protected path needs a person's approval.", req.Path, we.Detail)
	case errors.Is(we, sandbox.ErrReadOnly):
		return Errorf(ErrPermissionDenied, "cannot write %s: it is protected and read-only in the sandbox (git metadata, or a path in sandbox.protected_paths such as .vscode or .envrc), so that nothing the agent does can change what host programs run. Ask the user to make this change.", req.Path)
	case errors.Is(we, sandbox.ErrSymlink) && we.Errno == "EXDEV":
		return Errorf(ErrValidation, "cannot write %s: %s resolves outside the workspace", req.Path, at)
	case errors.Is(we, sandbox.ErrSymlink):
		return Errorf(ErrValidation, "cannot write %s: %s is a symbolic link, and agentbox never writes through one; write the file at its real path instead", req.Path, at)
	case errors.Is(we, sandbox.ErrNoSpace) && we.Errno == "EFBIG":
		return Errorf(ErrExecution, "cannot write %s: the content (%d bytes) is larger than the sandbox's file size limit (sandbox.file_size_mb)", req.Path, len(req.Data))
	case errors.Is(we, sandbox.ErrNoSpace):
		return Errorf(ErrExecution, "cannot write %s: no space left on the device (or the disk quota is used up)", req.Path)
	}
	switch we.Errno {
	case "ENOTDIR":
		return Errorf(ErrValidation, "cannot write %s: %s is not a directory", req.Path, at)
	case "EISDIR":
		return Errorf(ErrValidation, "cannot write %s: it is a directory", req.Path)
	case "EINVAL":
		return Errorf(ErrValidation, "cannot write %s: %s is not a regular file", req.Path, at)
	case "ENAMETOOLONG":
		return Errorf(ErrValidation, "cannot write %s: the name is too long", req.Path)
	case "EACCES", "EPERM":
		return Errorf(ErrPermissionDenied, "cannot write %s: the file system denies it (permissions of %s)", req.Path, at)
	}
	return Errorf(ErrExecution, "writing %s failed: %s", req.Path, trimOutput(we.Detail))
}

// SandboxJobs adapts sandbox.Jobs to Jobs.
type SandboxJobs struct {
	Jobs sandbox.Jobs
}

// Start implements Jobs.
func (j SandboxJobs) Start(ctx context.Context, req ExecRequest) (string, error) {
	id, err := j.Jobs.Start(ctx, toSpec(req))
	if err != nil {
		return "", SandboxError(err)
	}
	return id, nil
}

// Read implements Jobs.
func (j SandboxJobs) Read(ctx context.Context, id string) (JobStatus, error) {
	out, err := j.Jobs.Output(id)
	if err != nil {
		return JobStatus{ID: id}, SandboxError(err)
	}
	st := JobStatus{ID: id, Running: !out.Done, Stdout: string(out.Stdout), Stderr: string(out.Stderr)}
	if out.Result != nil {
		st.ExitCode = out.Result.ExitCode
		st.ContainerID = out.Result.ContainerID
		st.Dropped = out.Result.StdoutDropped + out.Result.StderrDropped
	}
	return st, nil
}

// Kill implements Jobs: it kills the job and returns its last output.
func (j SandboxJobs) Kill(ctx context.Context, id string) (JobStatus, error) {
	if err := j.Jobs.Kill(ctx, id); err != nil {
		return JobStatus{ID: id}, SandboxError(err)
	}
	return j.Read(ctx, id)
}

// SnapshotStore adapts a snapshot.Store to Snapshotter.
type SnapshotStore struct {
	Store *snapshot.Store
}

// Begin implements Snapshotter: a single file is snapshotted alone,
// several files or the workspace as a whole.
func (s SnapshotStore) Begin(ctx context.Context, info SnapshotInfo, scope Scope) (SnapshotCall, error) {
	sc := snapshot.Whole()
	if scope.Kind == ScopeFiles && len(scope.Paths) == 1 {
		sc = snapshot.File(scope.Paths[0])
	}
	call, err := s.Store.Begin(ctx, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary}, sc)
	if err != nil {
		return nil, err
	}
	if info.Keep != nil {
		call.SetKeep(keepFunc(info.Keep))
	}
	return snapCall{call}, nil
}

// BeginDetached implements DetachedSnapshotter (see snapshot.Detached).
func (s SnapshotStore) BeginDetached(ctx context.Context, info SnapshotInfo) (SnapshotCall, error) {
	d, err := s.Store.BeginDetached(ctx, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary})
	if err != nil {
		return nil, err
	}
	if info.Keep != nil {
		d.SetKeep(keepFunc(info.Keep))
	}
	return snapDetached{d}, nil
}

type snapDetached struct{ d *snapshot.Detached }

func (s snapDetached) Finish(ctx context.Context) (JournalEntry, error) {
	e, err := s.d.Finish(ctx)
	if err != nil {
		return JournalEntry{}, err
	}
	return journalEntry(e), nil
}

func (s snapDetached) Abort(ctx context.Context) error { return s.d.Abort(ctx) }

func journalEntry(e snapshot.Entry) JournalEntry {
	out := JournalEntry{ID: e.ID, Changes: make([]Change, 0, len(e.Changes)), RevertError: e.RevertError}
	for _, c := range e.Changes {
		out.Changes = append(out.Changes, Change{Path: c.Path, Op: string(c.Op)})
	}
	for _, r := range e.Reverted {
		out.Reverted = append(out.Reverted, ProtectedChange{Path: r.Path, Op: string(r.Op), Reason: r.Reason})
	}
	return out
}

func keepFunc(keep func(context.Context, []ProtectedChange) []string) snapshot.KeepFunc {
	return func(ctx context.Context, ps []snapshot.Protected) []string {
		in := make([]ProtectedChange, 0, len(ps))
		for _, p := range ps {
			in = append(in, ProtectedChange{Path: p.Path, Op: string(p.Op), Reason: p.Reason})
		}
		return keep(ctx, in)
	}
}

type snapCall struct{ c *snapshot.Call }

func (s snapCall) Finish(ctx context.Context) (JournalEntry, error) {
	e, err := s.c.Finish(ctx)
	if err != nil {
		return JournalEntry{}, err
	}
	return journalEntry(e), nil
}

func (s snapCall) Abort(ctx context.Context) error { return s.c.Abort(ctx) }
