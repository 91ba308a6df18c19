// Package sandbox owns the contract for running one command in a fresh,
// hardened, throwaway environment: [Spec] in, [Result] out.
//
// A [Runner] runs exactly one command per container (or whatever isolation
// unit its backend uses) and destroys it afterwards. It promises that the
// command sees only the workspace (at the same absolute path), a
// read-only toolchain and a private /tmp; that its environment is
// scrubbed (see [Env]), with every git configuration key that names a
// program overridden wherever the environment can override it
// ([GitSafeEnv], which also lists the keys it cannot); that it is killed as
// a whole when its timeout expires or its ctx is cancelled; and that
// output beyond the cap keeps head and tail with the dropped byte count
// reported.
//
// Runner.WriteFile writes one file in such an environment, with the mounts
// and limits a command gets, without running a program; a [FileWrite] with
// a Gate becomes visible only once the gate opens (docs/gated-writes.md).
//
// Backends live in sub-packages (sandbox/docker); every backend passes the
// conformance suite in sandbox/sandboxtest. [Jobs] runs commands in the
// background on top of any Runner.
//
// This package knows nothing of classification, tools or snapshots.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox/agentbox/config"
)

// DefaultOutputCap is the bytes kept per stream when [Spec].OutputCap is 0.
const DefaultOutputCap = 1 << 20

// Sentinel errors. Backends wrap them; test with errors.Is.
var (
	// ErrInvalidSpec: the Spec itself is wrong (no command, relative or
	// outside workdir, bad env entry).
	ErrInvalidSpec = errors.New("invalid command spec")
	// ErrTimeout: the command outlived its timeout and was killed. The
	// Result returned alongside is complete (TimedOut, Killed, exit 137).
	ErrTimeout = errors.New("command timed out")
	// ErrCanceled: the caller's ctx ended; the command was killed. The
	// Result returned alongside holds what was captured.
	ErrCanceled = errors.New("command canceled")
	// ErrUnavailable: the backend (engine, image) cannot run commands.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrNoEgress: network.mode is allowlist and the egress proxy, the
	// containers' only way out, could not start. Always wrapped together
	// with ErrUnavailable: no command runs without the proxy.
	ErrNoEgress = errors.New("the egress proxy could not start")
	// ErrUnsafeWorkspace: the workspace is in a state the sandbox refuses
	// to run in (for example a protected path that is a symlink).
	ErrUnsafeWorkspace = errors.New("unsafe workspace")
	// ErrClosed: the Runner or Jobs was closed.
	ErrClosed = errors.New("sandbox closed")
	// ErrNotFound: no such background job.
	ErrNotFound = errors.New("no such job")
)

// Stream names an output stream.
type Stream uint8

// The two output streams.
const (
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("stream(%d)", uint8(s))
}

// Spec is one command to run. Exactly one of Argv and Shell is set.
type Spec struct {
	// Argv is run exactly as given (Argv[0] looked up in the fixed PATH).
	Argv []string
	// Shell is run under `bash -c` (`sh -c` when the image has no bash),
	// non-interactive, with no profile or rc file.
	Shell string
	// Workdir is absolute and inside the workspace; "" means the
	// workspace root.
	Workdir string
	// Env holds extra KEY=VALUE entries applied on top of the scrubbed
	// environment.
	Env []string
	// Stdin is the command's whole standard input; nil means /dev/null.
	// The sandbox sets no size limit of its own (it streams it); callers
	// bound their input (tools.max_input_bytes).
	Stdin []byte
	// Timeout: 0 means the backend's default timeout
	// (sandbox.default_timeout); longer ones are capped at its
	// sandbox.max_timeout (see Normalize).
	Timeout time.Duration
	// OutputCap is the number of bytes kept per stream (head and tail);
	// 0 means the backend's configured cap.
	OutputCap int
	// ReadOnly mounts the workspace read-only: the kernel refuses every
	// write to it (EROFS). Set for calls that were allowed because they
	// were judged read-only, so that a wrong judgement changes nothing.
	ReadOnly bool
	// OnOutput, when set, receives every chunk of output as it arrives,
	// uncapped, from a single goroutine. It must not block for long and
	// must not retain p.
	OnOutput func(stream Stream, p []byte)
	// Call and Session name the tool call and MCP session the command
	// belongs to: the egress proxy attributes its connections to them.
	Call, Session string
}

// Result is what happened. For a command killed on timeout, TimedOut and
// Killed are set, ExitCode is 137 and Signal "SIGKILL".
type Result struct {
	// ExitCode is the command's exit status; 128+n when killed by signal n.
	ExitCode int
	// Signal names the signal that ended the command ("SIGKILL"), or "".
	Signal string
	// Stdout and Stderr hold head and tail of each stream within the cap;
	// when bytes were dropped, a marker line separates head from tail
	// (see Capture.Bytes).
	Stdout, Stderr []byte
	// StdoutDropped and StderrDropped count the bytes left out.
	StdoutDropped, StderrDropped int64
	// Cwd is the shell's working directory when it exited (Workdir when
	// unknown or for Argv commands).
	Cwd string
	// TimedOut: killed because the timeout expired.
	TimedOut bool
	// Killed: the container was killed from outside (timeout or cancel).
	Killed bool
	// OOMKilled: a process of the command was killed for exceeding the
	// memory limit.
	OOMKilled bool
	// Duration is wall time from hand-over to exit.
	Duration time.Duration
	// ContainerID identifies the throwaway container (for logs).
	ContainerID string
}

// Runner runs commands, one fresh environment each. Implementations are
// safe for concurrent use.
type Runner interface {
	// Run runs spec to completion. The error is nil when the command ran
	// (whatever its exit status); it wraps ErrTimeout or ErrCanceled (with
	// a valid Result) when the command was killed for that reason, and
	// ErrInvalidSpec, ErrUnavailable, ErrUnsafeWorkspace or ErrClosed
	// when it could not run at all.
	Run(ctx context.Context, spec Spec) (Result, error)
	// WriteFile writes one file beneath the workspace, atomically, with
	// the same mounts and limits a command gets, without running any
	// program; see FileWrite. Refusals and failures are *WriteError;
	// otherwise its errors are those of Run.
	WriteFile(ctx context.Context, w FileWrite) error
	// Close kills running commands and removes every container this
	// runner owns.
	Close(ctx context.Context) error
}

// Normalize validates spec against the workspace and fills defaults: the
// workdir (cleaned, default workspace) and the timeout, the only place a
// backend clamps it: 0 means defaultTimeout, anything longer than
// maxTimeout is capped (config.ClampTimeout; a backend without a config
// passes 0 for both, meaning config's). It does not touch OutputCap.
func Normalize(spec Spec, workspace string, defaultTimeout, maxTimeout time.Duration) (Spec, error) {
	if (len(spec.Argv) == 0) == (spec.Shell == "") {
		return spec, fmt.Errorf("%w: exactly one of argv and shell must be set", ErrInvalidSpec)
	}
	if len(spec.Argv) > 0 && spec.Argv[0] == "" {
		return spec, fmt.Errorf("%w: empty argv[0]", ErrInvalidSpec)
	}
	for _, s := range append(append([]string{spec.Shell}, spec.Argv...), spec.Env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return spec, fmt.Errorf("%w: NUL byte in command or env", ErrInvalidSpec)
		}
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return spec, fmt.Errorf("%w: env entry %q is not KEY=VALUE", ErrInvalidSpec, kv)
		}
	}
	if spec.Workdir == "" {
		spec.Workdir = workspace
	}
	if !filepath.IsAbs(spec.Workdir) {
		return spec, fmt.Errorf("%w: workdir %q is not absolute", ErrInvalidSpec, spec.Workdir)
	}
	spec.Workdir = filepath.Clean(spec.Workdir)
	if !config.Within(spec.Workdir, workspace) {
		return spec, fmt.Errorf("%w: workdir %s is outside the workspace %s", ErrInvalidSpec, spec.Workdir, workspace)
	}
	if spec.Timeout < 0 {
		return spec, fmt.Errorf("%w: negative timeout", ErrInvalidSpec)
	}
	spec.Timeout = config.ClampTimeout(spec.Timeout, defaultTimeout, maxTimeout)
	if spec.OutputCap < 0 {
		return spec, fmt.Errorf("%w: negative output cap", ErrInvalidSpec)
	}
	return spec, nil
}
