package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Env is what a tool's Run gets besides its params. The pipeline builds one
// per call; tools must not keep it after Run returns.
type Env struct {
	// CallID identifies this call in the journal, the audit log and results.
	CallID string
	// Workspace is the workspace's real absolute path.
	Workspace string
	// Root is the workspace opened as an os.Root: every host-side file
	// access by a tool goes through it (or through ReadRoots), never
	// through plain os.Open of a joined path.
	Root *os.Root
	// ReadOnlyDirs are extra directories a read tool may read (absolute,
	// real paths), each with its own os.Root in ReadRoots.
	ReadOnlyDirs []string
	ReadRoots    map[string]*os.Root
	// Session is the calling session: cwd, read tracker, background jobs.
	Session *Session
	// Sandbox runs commands in a throwaway container. Nil when no engine
	// is configured: tools that need it must fail with ErrInternal.
	// The pipeline wraps it per call, read-only or gated (see the
	// package doc, "The sandbox a tool gets").
	Sandbox Sandbox
	// Jobs runs background commands (Bash run_in_background). May be nil.
	// Wrapped per call like Sandbox.
	Jobs Jobs
	// Detached is the call's open snapshot when its scope is Detached; the
	// tool hands it to the job it starts with AttachJobSnapshot.
	Detached *DetachedSnapshot
	// Verdict is the classifier's verdict for the call's command field
	// (tools whose params have an `agentbox:"command"` field), else nil.
	Verdict *Verdict
	// Limits for output sizes and timeouts.
	Limits Limits
	// Logger is never nil (a discarding logger by default).
	Logger *slog.Logger
	// Progress, when non-nil, receives streamed output while the call runs.
	Progress func(Chunk)
	// Now is the clock.
	Now func() time.Time
	// ReadOnly is set when the call takes no snapshot (judged read-only):
	// Sandbox and Jobs then run every command with the workspace mounted
	// read-only.
	ReadOnly bool
	// ProtectedApproved lists the workspace-relative protected paths this
	// call was approved to change (Call.ProtectedApproved): WriteFile
	// lets the sandbox write them (read-only mounts still refuse).
	ProtectedApproved []string
	// wrote records what WriteFile wrote to approved protected paths.
	wrote *writtenSet
	// Hidden reports whether a deny rule covers path for this tool (for
	// example Read(./secrets/**) for Grep). Tools that walk directories
	// (Glob, Grep, LS) must skip such paths; the pipeline only checks the
	// paths in the params. Nil means nothing is hidden.
	Hidden func(path string) bool
}

// Chunk is a piece of streamed output.
type Chunk struct {
	Stream string // "stdout" or "stderr"
	Data   []byte
}

// Limits bound what a call may produce and how long it may run.
type Limits struct {
	// MaxOutputBytes caps model-facing content; the truncate stage keeps
	// head and tail and reports what it dropped.
	MaxOutputBytes int
	// DefaultTimeout and MaxTimeout bound commands (config.ClampTimeout;
	// 0 stands for config's).
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
}

// ExecRequest is one command for the sandbox.
type ExecRequest struct {
	// Command is a shell string run under bash -c (sh -c without bash).
	// Exactly one of Command and Argv is set.
	Command string
	Argv    []string
	// Dir is the absolute working directory, inside the workspace.
	Dir string
	// Env adds variables (the sandbox scrubs the rest).
	Env []string
	// Stdin is fed to the command; nil means closed.
	Stdin []byte
	// Timeout is 0 for the sandbox's default.
	Timeout time.Duration
	// OutputLimit caps captured output per stream (0 = sandbox default).
	OutputLimit int
	// OnOutput receives output as it arrives; may be nil.
	OnOutput func(Chunk)
	// ReadOnly runs the command with the workspace mounted read-only.
	ReadOnly bool
	// Call and Session name the call and session the command runs for
	// (the network proxy attributes its connections to them).
	Call, Session string
}

// readOnlySandbox runs every command of a read-only call with the
// workspace mounted read-only.
type readOnlySandbox struct{ Sandbox }

func (s readOnlySandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	req.ReadOnly = true
	return s.Sandbox.Exec(ctx, req)
}

// WriteFile refuses: a read-only call writes nothing.
func (s readOnlySandbox) WriteFile(ctx context.Context, req WriteRequest) error {
	return Errorf(ErrInternal, "this call was judged read-only, so it cannot write %s", req.Path)
}

// gatedSandbox is the Sandbox of a call whose snapshot was begun Staged:
// its writes wait in the sandbox for the gate (WriteRequest.Gate); a
// command, which cannot be staged, waits before it starts.
type gatedSandbox struct {
	Sandbox
	gate func(context.Context) error
}

func (s gatedSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if err := s.gate(ctx); err != nil {
		return ExecResult{}, gateError(ctx, err)
	}
	return s.Sandbox.Exec(ctx, req)
}

func (s gatedSandbox) WriteFile(ctx context.Context, req WriteRequest) error {
	var mu sync.Mutex
	var gerr error
	req.Gate = func() error {
		err := s.gate(ctx)
		mu.Lock()
		gerr = err
		mu.Unlock()
		return err
	}
	err := s.Sandbox.WriteFile(ctx, req)
	mu.Lock()
	defer mu.Unlock()
	if err != nil && gerr != nil {
		// Withdrawn because the gate failed: say so (and only then: a
		// write whose gate opened may have been made).
		return gateError(ctx, gerr)
	}
	return err
}

// gatedJobs starts a Staged call's background jobs once its gate opened.
type gatedJobs struct {
	Jobs
	gate func(context.Context) error
}

func (j gatedJobs) Start(ctx context.Context, req ExecRequest) (string, error) {
	if err := j.gate(ctx); err != nil {
		return "", gateError(ctx, err)
	}
	return j.Jobs.Start(ctx, req)
}

// gateError is the model-facing error of a gate that did not open: the
// call was cancelled (ctx is done), or the snapshot's record could not
// reach the disk.
func gateError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return Errorf(ErrTimeout, "the call was cancelled before its snapshot was on the disk; nothing was changed")
	}
	return Errorf(ErrInternal, "agentbox could not make this call's snapshot durable, so it changed nothing: %v", err)
}

// readOnlyJobs starts the background commands of a read-only call with
// the workspace mounted read-only.
type readOnlyJobs struct{ Jobs }

func (j readOnlyJobs) Start(ctx context.Context, req ExecRequest) (string, error) {
	req.ReadOnly = true
	return j.Jobs.Start(ctx, req)
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode int
	// Stdout and Stderr carry the sandbox's marker line where it cut
	// bytes out of their middle: the one note of that cut.
	Stdout, Stderr string
	// StdoutDropped/StderrDropped count bytes cut from the middle.
	StdoutDropped, StderrDropped int64
	// Dir is the command's final working directory ("" if unknown).
	Dir         string
	TimedOut    bool
	Killed      bool
	OOMKilled   bool
	Duration    time.Duration
	ContainerID string
	// Network summarizes the connections the command opened through the
	// egress proxy ("" when none).
	Network string
}

// Sandbox is the subset of the sandbox runner tools use.
type Sandbox interface {
	// Exec runs a command. An error means the sandbox failed (not the
	// command: a non-zero exit is a result).
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// WriteFile writes one file in the sandbox, atomically, without
	// running a program. Its errors are *ToolError meant for the model
	// (a protected or read-only path, a symlink on the path, no space).
	WriteFile(ctx context.Context, req WriteRequest) error
}

// WriteRequest is one file for [Sandbox].WriteFile.
type WriteRequest struct {
	// Path is absolute and clean, inside the workspace; Rel is the same
	// path relative to the workspace, slash-separated.
	Path, Rel string
	// Data is the whole new content.
	Data []byte
	// Mode is the permission bits of a new file; an existing file keeps
	// its own.
	Mode fs.FileMode
	// ApprovedProtected: the call was approved to change this protected
	// path (ProtectStage).
	ApprovedProtected bool
	// Gate, when set, must return nil before the file (or a directory it
	// needs) becomes visible; if it fails nothing is written. A sandbox
	// may stage the content meanwhile; one that cannot calls it first
	// (see sandbox.FileWrite.Gate).
	Gate func() error
}

// JobStatus is a background job's state and the output not yet read.
type JobStatus struct {
	ID       string
	Running  bool
	ExitCode int // valid when !Running
	// Stdout and Stderr carry the sandbox's marker line where it cut
	// output that exceeded its cap between reads.
	Stdout, Stderr string
	ContainerID    string
	// Journal is the entry that recorded the job's changes, set by the
	// Read or Kill that saw the job end (when the job took over the
	// snapshot of the call that started it, Jobs.AttachSnapshot);
	// JournalError says why it could not be yet. The pipeline records
	// it as the journal entry of that Read or Kill call.
	Journal      *JournalEntry
	JournalError string
}

// Jobs runs background commands. Read returns only output not returned
// by an earlier Read. Safe for concurrent use.
type Jobs interface {
	Start(ctx context.Context, req ExecRequest) (id string, err error)
	Read(ctx context.Context, id string) (JobStatus, error)
	Kill(ctx context.Context, id string) (JobStatus, error)
	// AttachSnapshot hands job id the open (detached) snapshot of the
	// call that started it: the job's end (Kill, the Read that sees it
	// ended, shutdown) finishes it and reports the entry in
	// JobStatus.Journal. It reports false when this Jobs does not
	// journal jobs; the call is then journaled when it returns. Tools use
	// Env.AttachJobSnapshot. JobSnapshots implements it.
	AttachSnapshot(id string, snap SnapshotCall) bool
}

// callJobs is the Jobs of one call's Env: a job's journal entry that a
// Read or Kill reports becomes this call's (for its audit record).
type callJobs struct {
	Jobs
	c *Call
}

func (j callJobs) Read(ctx context.Context, id string) (JobStatus, error) {
	st, err := j.Jobs.Read(ctx, id)
	if st.Journal != nil {
		j.c.Journal = st.Journal
	}
	return st, err
}

func (j callJobs) Kill(ctx context.Context, id string) (JobStatus, error) {
	st, err := j.Jobs.Kill(ctx, id)
	if st.Journal != nil {
		j.c.Journal = st.Journal
	}
	return st, err
}

// WriteFile writes data to the absolute path inside the workspace through
// the sandbox, atomically (a temporary file in the same directory, then
// rename). The sandbox's init writes it inside the container, so the
// container's read-only mounts apply; no process is started. mode applies
// to a new file; an existing one keeps its own. Missing parent
// directories are created; a symlink anywhere on the path is refused. It
// fails with [ErrInternal] when no sandbox is configured, and for a call
// judged read-only.
func (e *Env) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if e.Sandbox == nil {
		return Errorf(ErrInternal, "no sandbox is configured, so files cannot be written; ask the operator to start the engine (agentbox engine start)")
	}
	rel, err := e.Rel(path)
	if err != nil {
		return err
	}
	if e.ReadOnly {
		return Errorf(ErrInternal, "this call was judged read-only, so it cannot write %s", path)
	}
	rel = filepath.ToSlash(rel)
	approved := slices.Contains(e.ProtectedApproved, rel)
	if approved && e.wrote != nil {
		// Before the write: what is on disk after the call is kept only
		// if it is this (keepFor), never what a running command put
		// there between this write and the snapshot's look.
		e.wrote.set(rel, data)
	}
	return e.Sandbox.WriteFile(ctx, WriteRequest{
		Path: filepath.Clean(path), Rel: rel, Data: data, Mode: mode.Perm(),
		ApprovedProtected: approved,
	})
}

// writtenSet maps workspace-relative paths to the hex SHA-256 of the
// content last written there. Safe for concurrent use.
type writtenSet struct {
	mu sync.Mutex
	m  map[string]string
}

func (w *writtenSet) set(rel string, data []byte) {
	sum := sha256.Sum256(data)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]string{}
	}
	w.m[rel] = hex.EncodeToString(sum[:])
}

// get returns the hash written to rel; a nil set knows nothing.
func (w *writtenSet) get(rel string) (string, bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.m[rel]
	return h, ok
}

// TrimDetail cuts a program's error output to a length fit for a
// model-facing message (500 bytes and an ellipsis).
func TrimDetail(s string) string {
	const max = 500
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
