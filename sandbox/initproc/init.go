package initproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// drainGrace is how long init keeps reading output after the command has
// exited, for data still in flight; a daemonized child holding the pipes
// open is not waited for beyond it.
const drainGrace = 150 * time.Millisecond

// stdinGrace bounds how long the status waits for stdin the command left
// unread to finish arriving (see run).
const stdinGrace = 10 * time.Second

// backstopGrace is added to the request's timeout before init kills the
// command itself (the executor normally kills the container first).
const backstopGrace = 2 * time.Second

// cwdFD is the descriptor the shell wrapper reports its final directory on.
const cwdFD = 3

// Main runs the init protocol on in/out and returns the process exit
// status. diag receives init's own diagnostics (the container's stderr).
//
// When expect is not nil, init first compares its mount table with it
// (VerifyMounts) and, on any difference, sends a Fatal frame naming it
// and exits without ever taking a request.
//
// After a command's request, init keeps reading in: its end (the
// executor closed the stream, or died and the engine closed it) or any
// byte kills the command's process group at once, and init's exit then
// takes everything else in the container with it. After a write request
// init may take another request (see serve); the stream's end then ends
// init.
func Main(in io.Reader, out io.Writer, diag io.Writer, expect []ExpectedMount) int {
	// Not dumpable: the command (same uid) can neither ptrace init nor
	// open /proc/1/fd to forge frames on init's stdout. gVisor still
	// lets it open /proc/1/fd: the exit status is sealed (frame.go).
	if os.Getpid() == 1 {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			fmt.Fprintln(diag, "agentbox init: prctl:", err)
			return 1
		}
	}
	// As PID 1, init only dies of signals it handles: catch (not ignore,
	// which the command would inherit) every signal the command could
	// send it. All of them, not only the terminating ones: the Go
	// runtime has a handler for every signal, and for SIGSEGV, SIGBUS,
	// SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS and SIGSTKFLT sent with
	// kill it crashes the program, so a command could end init (and its
	// own call) with `kill -SEGV 1`. Under gVisor SIGKILL and SIGSTOP
	// still reach init (see the README's limits).
	if os.Getpid() == 1 {
		sigs := make(chan os.Signal, 8)
		signal.Notify(sigs)
		go func() {
			for range sigs {
			}
		}()
	}
	fw := &frameWriter{w: out}
	if expect != nil {
		if err := verifySelf(expect); err != nil {
			fmt.Fprintln(diag, "agentbox init: refusing:", err)
			fw.last(Fatal, []byte("mount verification: "+err.Error()))
			return 1
		}
	}
	_, bashErr := os.Stat("/bin/bash")
	ready, _ := json.Marshal(ReadyInfo{PID: os.Getpid(), Bash: bashErr == nil, Proto: Proto})
	if err := fw.write(Ready, ready); err != nil {
		fmt.Fprintln(diag, "agentbox init: ready:", err)
		return 1
	}
	for first := true; ; first = false {
		t, p, err := ReadFrame(in)
		if !first && errors.Is(err, io.EOF) {
			return 0 // the executor is done with this container
		}
		if err != nil || t != Request {
			if err == nil {
				err = fmt.Errorf("%w: got %q, want request", ErrFrame, t)
			}
			fmt.Fprintln(diag, "agentbox init: request:", err)
			return 1
		}
		again, err := serve(p, fw, bashErr == nil, in)
		if err != nil {
			fmt.Fprintln(diag, "agentbox init:", err)
			return 1
		}
		if !again {
			return 0
		}
	}
}

// serve handles one request (its payload p). A command ends the
// container's service: again is false. After a write, which ran nothing
// of the agent's, init takes another request when the write's content
// was read to its end (the stream is in step): the status says so
// (Status.Reusable) and the executor may hand the same container the next
// request.
func serve(p []byte, fw *frameWriter, bash bool, in io.Reader) (again bool, _ error) {
	began := time.Now()
	if err := fw.write(Started, nil); err != nil {
		return false, fmt.Errorf("started: %w", err)
	}
	var req Req
	if err := json.Unmarshal(p, &req); err != nil {
		fw.last(Fatal, []byte("decoding request: "+err.Error()))
		return false, fmt.Errorf("decoding request: %w", err)
	}
	if len(req.Key) != KeyLen {
		fw.last(Fatal, []byte("request without a key"))
		return false, errors.New("request without a key")
	}
	var st Status
	if req.Write != nil {
		content := &dataReader{r: in}
		var gate func() error
		g := &commitGate{in: in, content: content}
		if req.Write.Gated {
			gate = g.wait
		}
		st = runWrite(*req.Write, content, gate)
		// A refused write may not have read its content (nor its Commit
		// frame): the rest is read and dropped, so that the next frame is
		// the next request.
		if req.Write.Gated {
			g.wait() // drains the content, then reads the Commit frame
			st.Reusable = !g.broken
		} else {
			_, err := io.Copy(io.Discard, content)
			st.Reusable = err == nil
		}
	} else {
		st = run(req, fw, bash, in)
	}
	st.InitMicros = time.Since(began).Microseconds()
	b, _ := json.Marshal(st)
	send := fw.last
	if st.Reusable {
		send = fw.write
	}
	if err := send(Exit, SealExit(req.Key, b)); err != nil {
		return false, fmt.Errorf("exit: %w", err)
	}
	return st.Reusable, nil
}

// command builds the process for req.
func command(req Req, bash bool) (*exec.Cmd, bool) {
	if req.Shell != "" {
		sh := "/bin/sh"
		if bash {
			sh = "/bin/bash"
		}
		// The EXIT trap reports the shell's final directory on fd 3. It
		// sits on its own line so the command's own first line parses
		// exactly as written.
		script := "trap 'pwd -P 2>/dev/null >&" + strconv.Itoa(cwdFD) + "' EXIT\n" + req.Shell
		return &exec.Cmd{Path: sh, Args: []string{sh, "-c", script}}, true
	}
	c := &exec.Cmd{Path: req.Argv[0], Args: req.Argv}
	if !strings.Contains(req.Argv[0], "/") {
		c.Path = lookPath(req.Argv[0], req.Env)
	}
	return c, false
}

// lookPath finds name in the request's PATH.
func lookPath(name string, env []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			continue
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

func run(req Req, fw *frameWriter, bash bool, in io.Reader) Status {
	if req.Egress != nil {
		stop := startEgress(*req.Egress, func(msg string) { _ = fw.write(Stderr, []byte(msg)) })
		defer stop()
	}
	cmd, shell := command(req, bash)
	cmd.Env = req.Env
	cmd.Dir = req.Workdir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdinW *os.File
	if req.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return Status{Code: 126, Error: err.Error()}
		}
		cmd.Stdin, stdinW = r, w
	}
	if home := envValue(req.Env, "HOME"); strings.HasPrefix(home, "/tmp/") {
		_ = os.MkdirAll(home, 0o700)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Status{Code: 126, Error: err.Error()}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return Status{Code: 126, Error: err.Error()}
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var cwdR, cwdW *os.File
	if shell {
		if cwdR, cwdW, err = os.Pipe(); err != nil {
			return Status{Code: 126, Error: err.Error()}
		}
		cmd.ExtraFiles = []*os.File{cwdW}
	}
	startErr := cmd.Start()
	outW.Close()
	errW.Close()
	if stdinW != nil {
		cmd.Stdin.(*os.File).Close()
	}
	if cwdW != nil {
		cwdW.Close()
	}
	if startErr != nil {
		code := 126
		if errors.Is(startErr, fs.ErrNotExist) || errors.Is(startErr, exec.ErrNotFound) {
			code = 127
		}
		if stdinW != nil {
			stdinW.Close()
		}
		msg := "agentbox: " + startErr.Error() + "\n"
		fw.write(Stderr, []byte(msg))
		return Status{Code: code, Cwd: req.Workdir, Error: startErr.Error()}
	}
	var wg sync.WaitGroup
	pump := func(r *os.File, t Type) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 && fw.write(t, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(outR, Stdout)
	go pump(errR, Stderr)

	var mw *memWatch
	if req.MemoryLimit > 0 {
		mw = watchMemory(req.MemoryLimit)
	}
	pgid := cmd.Process.Pid
	// The executor keeps the stream open while it waits; its end means
	// nobody waits any more (killed, crashed): stop the command now. The
	// command's stdin comes first, as Data frames; a stream cut inside
	// them is the same end.
	fed := make(chan struct{})
	go func() {
		if stdinW != nil {
			err := feedStdin(stdinW, &dataReader{r: in})
			close(fed)
			if err != nil {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				return
			}
		}
		var b [1]byte
		_, _ = in.Read(b[:])
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	if req.TimeoutMS > 0 {
		t := time.AfterFunc(time.Duration(req.TimeoutMS)*time.Millisecond+backstopGrace, func() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		})
		defer t.Stop()
	}
	waitErr := cmd.Wait()
	memKills := 0
	if mw != nil {
		memKills = mw.finish()
	}

	// Output still in flight is read for a moment; whatever keeps the
	// pipes open after that (a daemonized child) is cut off.
	deadline := time.Now().Add(drainGrace)
	outR.SetReadDeadline(deadline)
	errR.SetReadDeadline(deadline)
	wg.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if stdinW != nil {
		// Stdin the command did not read is still arriving: the status
		// waits until all of it has (bounded). An engine that sees the
		// container end while the executor still sends may cut the
		// stream before the status gets through (Podman does).
		select {
		case <-fed:
		case <-time.After(stdinGrace):
		}
	}

	st := Status{Cwd: req.Workdir}
	if cwdR != nil {
		cwdR.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		b, _ := io.ReadAll(io.LimitReader(cwdR, 4096))
		if d := strings.TrimRight(string(b), "\n"); strings.HasPrefix(d, "/") && !strings.Contains(d, "\n") {
			st.Cwd = d
		}
	}
	ps := cmd.ProcessState
	if ps == nil {
		return Status{Code: 126, Error: fmt.Sprint(waitErr)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Code = 128 + int(ws.Signal())
		st.Signal = SignalName(ws.Signal())
	} else {
		st.Code = ps.ExitCode()
	}
	st.OOM = memKills > 0 || oomKills() > 0
	return st
}

// feedStdin copies the Data frames of in to the command's stdin and
// closes it. A command that stops reading early is no error: the rest is
// read and dropped. The error is that of the stream.
func feedStdin(w *os.File, in io.Reader) error {
	defer w.Close()
	buf := make([]byte, 64<<10)
	writing := true
	for {
		n, err := in.Read(buf)
		if n > 0 && writing {
			if _, werr := w.Write(buf[:n]); werr != nil {
				writing = false
				w.Close()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// oomKills reads how many processes the memory cgroup's OOM killer has
// killed (cgroup v1, then v2); 0 when unknown.
func oomKills() int {
	for _, f := range []string{"/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
	}
	return 0
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

// SignalName names a signal the way Result.Signal reports it.
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}
