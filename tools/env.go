package tools

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	Sandbox Sandbox
	// Jobs runs background commands (Bash run_in_background). May be nil.
	Jobs Jobs
	// Detached is the call's open snapshot when its scope is Detached; the
	// tool hands it to the job it starts with AttachJobSnapshot.
	Detached *DetachedSnapshot
	// Journaled, when non-nil, records a journal entry the call wrote
	// itself (BashOutput or KillShell journaling a background job that
	// ended), for the audit log.
	Journaled func(JournalEntry)
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
	// DefaultTimeout and MaxTimeout bound commands.
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
}

// readOnlySandbox runs every command of a read-only call with the
// workspace mounted read-only.
type readOnlySandbox struct{ Sandbox }

func (s readOnlySandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	req.ReadOnly = true
	return s.Sandbox.Exec(ctx, req)
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
	ExitCode       int
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
}

// Sandbox is the subset of the sandbox runner tools use. An error means
// the sandbox failed (not the command: a non-zero exit is a result).
type Sandbox interface {
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// JobStatus is a background job's state and the output not yet read.
type JobStatus struct {
	ID             string
	Running        bool
	ExitCode       int // valid when !Running
	Stdout, Stderr string
	Dropped        int64
	ContainerID    string
	// Journal is the entry that recorded the job's changes, set by the
	// Read or Kill that saw the job end (Jobs implementing
	// JobSnapshotAttacher); JournalError says why it could not be yet.
	Journal      *JournalEntry
	JournalError string
}

// Jobs runs background commands. Read returns only output not returned
// by an earlier Read. Safe for concurrent use.
type Jobs interface {
	Start(ctx context.Context, req ExecRequest) (id string, err error)
	Read(ctx context.Context, id string) (JobStatus, error)
	Kill(ctx context.Context, id string) (JobStatus, error)
}

// WriteFile writes data to the absolute path inside the workspace through
// the sandbox (a throwaway container), atomically: a temporary file in the
// same directory, then rename. mode is applied to the result. Parent
// directories are created. It fails with ErrInternal when no sandbox is
// configured.
func (e *Env) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if e.Sandbox == nil {
		return Errorf(ErrInternal, "no sandbox is configured, so files cannot be written; ask the operator to start the engine (agentbox engine start)")
	}
	if _, err := e.Rel(path); err != nil {
		return err
	}
	// Only sh, mkdir, mktemp, cat, chmod, mv and rm are needed, so that
	// minimal images work.
	// The paths travel as printf %b escapes: the request to the container
	// is JSON, which cannot carry a name that is not valid UTF-8.
	const script = `set -e
umask 077
p=$(printf '%bX' "$1"); p=${p%X}
d=$(printf '%bX' "$3"); d=${d%X}
mkdir -p -- "$d"
t=$(mktemp "$d/.agentbox-write.XXXXXX")
trap 'rm -f -- "$t"' EXIT
cat > "$t"
chmod "$2" "$t"
mv -f -- "$t" "$p"
trap - EXIT`
	res, err := e.Sandbox.Exec(ctx, ExecRequest{
		Argv:  []string{"sh", "-c", script, "sh", printfBytes(path), octal(mode.Perm()), printfBytes(filepath.Dir(filepath.Clean(path)))},
		Dir:   e.Workspace,
		Stdin: data,
	})
	if err != nil {
		return err
	}
	if res.TimedOut {
		return Errorf(ErrTimeout, "writing %s timed out", path)
	}
	if res.ExitCode != 0 {
		return Errorf(ErrExecution, "writing %s failed: %s", path, trimOutput(res.Stderr))
	}
	return nil
}

// printfBytes writes s for printf's %b: backslashes and bytes above 0x7f
// as \0ooo octal escapes, everything else as it is, so that the result is
// ASCII plus s's other bytes, and %b gives back exactly s.
func printfBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c >= 0x80 {
			b.WriteString(`\0`)
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func octal(m fs.FileMode) string {
	const digits = "01234567"
	v := uint32(m)
	return string([]byte{'0', digits[(v>>6)&7], digits[(v>>3)&7], digits[v&7]})
}

func trimOutput(s string) string {
	const max = 500
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
