package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// Fake is the shared in-process test double for sandbox.Runner: it keeps
// the whole contract of package sandbox that does not need isolation
// (spec validation, exit codes and signals, streams, stdin, workdir and
// final cwd, the scrubbed environment, timeouts and cancellation that
// kill the whole process group, output capping, OnOutput from one
// goroutine, Close) by running each command as a host process in its own
// process group. It isolates nothing: the commands see the host. Use it
// in plain `go test` for code built on a Runner, and run the suite
// against it with WithoutIsolation.
//
// A *Fake is safe for concurrent use.
type Fake struct {
	workspace string
	calls     atomic.Int64

	mu      sync.Mutex
	closed  bool
	running map[*exec.Cmd]struct{}
	runs    sync.WaitGroup
	done    chan struct{} // closed by Close
}

var _ sandbox.Runner = (*Fake)(nil)

// NewFake returns a Fake whose commands run in workspace (absolute).
func NewFake(workspace string) *Fake {
	return &Fake{workspace: filepath.Clean(workspace), running: map[*exec.Cmd]struct{}{}, done: make(chan struct{})}
}

// Calls is the number of Run and WriteFile calls so far: tests of code
// built on a Runner check with it that the sandbox was (or was not) used.
func (f *Fake) Calls() int { return int(f.calls.Load()) }

// Run implements sandbox.Runner.
func (f *Fake) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	f.calls.Add(1)
	spec, err := sandbox.Normalize(spec, f.workspace, 0, 0) // config's default and cap
	if err != nil {
		return sandbox.Result{}, err
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return sandbox.Result{}, sandbox.ErrClosed
	}
	f.runs.Add(1)
	f.mu.Unlock()
	defer f.runs.Done()

	home, err := os.MkdirTemp("", "sandboxtest-home-")
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	defer os.RemoveAll(home)
	res := sandbox.Result{Cwd: spec.Workdir}
	cmd, cwdR, err := command(spec, home)
	if err != nil {
		return res, err
	}
	if cmd == nil {
		res.ExitCode = 127
		res.Stderr = fmt.Appendf(nil, "%s: command not found\n", spec.Argv[0])
		return res, nil
	}
	if cwdR != nil {
		defer cwdR.Close()
	}
	out := startOutput(cmd, spec)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		closeCwdWriter(cmd)
		out.finish()
		return res, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	closeCwdWriter(cmd)
	f.track(cmd, true)
	defer f.track(cmd, false)
	why, werr := f.wait(ctx, cmd, spec.Timeout)
	// The group may have left children holding the pipes: kill them too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out.finish()
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutDropped = out.stdout.Bytes(), out.stdout.Dropped()
	res.Stderr, res.StderrDropped = out.stderr.Bytes(), out.stderr.Dropped()
	if err := exitStatus(cmd, werr, &res); err != nil {
		return res, err
	}
	if cwdR != nil {
		_ = cwdR.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		b, _ := io.ReadAll(io.LimitReader(cwdR, 4096))
		if d := strings.TrimSpace(string(b)); d != "" && config.Within(d, f.workspace) {
			res.Cwd = d
		}
	}
	return res, killedResult(ctx, why, spec.Timeout, &res)
}

// command is the host process for spec with the scrubbed environment and
// HOME home, in its own process group; for a shell command also the read
// end of the pipe its EXIT trap reports the final directory on (fd 3, the
// write end in cmd.ExtraFiles). A nil cmd means argv[0] was not found.
func command(spec sandbox.Spec, home string) (*exec.Cmd, *os.File, error) {
	var cmd *exec.Cmd
	var cwdR *os.File
	if spec.Shell != "" {
		// The EXIT trap reports the final directory, as init's wrapper does.
		cmd = exec.Command("/bin/sh", "-c", "trap 'pwd -P 2>/dev/null >&3' EXIT\n"+spec.Shell)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
		cwdR = r
		cmd.ExtraFiles = []*os.File{w}
	} else {
		path, err := lookPath(spec.Argv[0])
		if err != nil {
			return nil, nil, nil
		}
		cmd = exec.Command(path, spec.Argv[1:]...)
		cmd.Args[0] = spec.Argv[0]
	}
	cmd.Dir = spec.Workdir
	// The scrubbed environment; HOME is a fresh directory of this command.
	cmd.Env = sandbox.Env("", nil, nil, append([]string{"HOME=" + home}, spec.Env...))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.Stdin != nil {
		cmd.Stdin = strings.NewReader(string(spec.Stdin))
	}
	return cmd, cwdR, nil
}

// closeCwdWriter closes this process's copy of the final-directory pipe.
func closeCwdWriter(cmd *exec.Cmd) {
	for _, w := range cmd.ExtraFiles {
		w.Close()
	}
}

// output connects a command's streams to the captures and OnOutput: two
// readers and one goroutine that delivers every chunk in order.
type output struct {
	stdout, stderr *sandbox.Capture
	outW, errW     *io.PipeWriter
	readers        sync.WaitGroup
	chunks         chan chunk
	delivered      chan struct{}
}

func startOutput(cmd *exec.Cmd, spec sandbox.Spec) *output {
	limit := spec.OutputCap
	if limit == 0 {
		limit = sandbox.DefaultOutputCap
	}
	o := &output{stdout: sandbox.NewCapture(limit), stderr: sandbox.NewCapture(limit), chunks: make(chan chunk, 64), delivered: make(chan struct{})}
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	o.outW, o.errW = outW, errW
	cmd.Stdout, cmd.Stderr = outW, errW
	for _, s := range []struct {
		r  *io.PipeReader
		st sandbox.Stream
	}{{outR, sandbox.Stdout}, {errR, sandbox.Stderr}} {
		o.readers.Add(1)
		go func() {
			defer o.readers.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := s.r.Read(buf)
				if n > 0 {
					o.chunks <- chunk{s.st, append([]byte(nil), buf[:n]...)}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	// One goroutine hands output to the captures and OnOutput.
	go func() {
		defer close(o.delivered)
		for c := range o.chunks {
			if c.stream == sandbox.Stderr {
				o.stderr.Write(c.p)
			} else {
				o.stdout.Write(c.p)
			}
			if spec.OnOutput != nil {
				spec.OnOutput(c.stream, c.p)
			}
		}
	}()
	return o
}

// finish ends the streams and waits until every chunk was delivered.
func (o *output) finish() {
	o.outW.Close()
	o.errW.Close()
	o.readers.Wait()
	close(o.chunks)
	<-o.delivered
}

// wait waits for cmd, killing its process group on timeout, on ctx's
// cancellation or on Close; why says which (nil: it exited).
func (f *Fake) wait(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (why, werr error) {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case werr = <-waited:
		return nil, werr
	case <-timer.C:
		why = sandbox.ErrTimeout
	case <-ctx.Done():
		why = sandbox.ErrCanceled
	case <-f.done:
		why = sandbox.ErrClosed
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return why, <-waited
}

// exitStatus sets res's exit code and signal from cmd's end.
func exitStatus(cmd *exec.Cmd, werr error, res *sandbox.Result) error {
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = signalName(ws.Signal())
	} else if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	} else if werr != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, werr)
	}
	return nil
}

// killedResult marks res as killed for why (nil: not killed) and returns
// the error Run reports for it.
func killedResult(ctx context.Context, why error, timeout time.Duration, res *sandbox.Result) error {
	switch why {
	case sandbox.ErrTimeout:
		res.TimedOut, res.Killed, res.ExitCode, res.Signal = true, true, 137, "SIGKILL"
		return fmt.Errorf("%w after %s", sandbox.ErrTimeout, timeout)
	case sandbox.ErrCanceled:
		res.Killed, res.ExitCode, res.Signal = true, 137, "SIGKILL"
		return fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
	case sandbox.ErrClosed:
		res.Killed, res.ExitCode, res.Signal = true, 137, "SIGKILL"
		return fmt.Errorf("%w: killed by Close", sandbox.ErrClosed)
	}
	return nil
}

type chunk struct {
	stream sandbox.Stream
	p      []byte
}

func (f *Fake) track(cmd *exec.Cmd, add bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		f.running[cmd] = struct{}{}
		if f.closed {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	} else {
		delete(f.running, cmd)
	}
}

// Close implements sandbox.Runner: it kills every running command and
// waits for them.
func (f *Fake) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.done)
	for cmd := range f.running {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.runs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// lookPath finds argv[0] in the fixed sandbox PATH.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		if fi, err := os.Stat(name); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return name, nil
		}
		return "", exec.ErrNotFound
	}
	for _, d := range filepath.SplitList(sandbox.Path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.Join(exec.ErrNotFound, fmt.Errorf("%s", name))
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// WriteFile implements sandbox.Runner with init's own write code run on
// the host (beneath the workspace, never through a symlink, atomic) and
// the default protection (config.Protection of the default sandbox
// section). It isolates nothing.
func (f *Fake) WriteFile(ctx context.Context, w sandbox.FileWrite) error {
	f.calls.Add(1)
	rel, err := sandbox.NormalizeWrite(w, f.workspace)
	if err != nil {
		return err
	}
	if !w.ApprovedProtected {
		sb := config.Default().Sandbox
		isGitDir := func(dir string) bool {
			for _, n := range []string{"HEAD", "objects", "refs"} {
				if _, err := os.Lstat(filepath.Join(f.workspace, filepath.FromSlash(dir), n)); err == nil {
					return true
				}
			}
			return false
		}
		if why, ok := sb.Protection().Match(rel, isGitDir); ok {
			return &sandbox.WriteError{Kind: sandbox.ErrProtected, Path: rel, Detail: why}
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
	}
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return sandbox.ErrClosed
	}
	req := initproc.WriteReq{Root: f.workspace, Rel: rel, Mode: uint32(w.Mode.Perm()), Size: int64(len(w.Content)), Gated: w.Gate != nil}
	werr := initproc.WriteGated(req, bytes.NewReader(w.Content), w.Gate)
	if werr != nil && werr.Op == "gate" {
		// As the Docker runner: a missing parent, sent again ungated.
		werr = initproc.Write(req, bytes.NewReader(w.Content))
	}
	if werr == nil {
		return nil
	}
	errno := ""
	if werr.Errno != 0 {
		errno = unix.ErrnoName(werr.Errno)
	}
	p := werr.Path
	if p == "" {
		p = rel
	}
	return &sandbox.WriteError{Kind: sandbox.WriteErrorKind(errno), Path: p, Errno: errno, Detail: werr.Msg}
}
