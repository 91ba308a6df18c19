package docker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// killGrace bounds the wait for the stream to end after a kill.
const killGrace = 15 * time.Second

// Run runs spec in a fresh container; see sandbox.Runner.
func (r *Runner) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	spec, err := sandbox.Normalize(spec, r.workspace, r.cfg.DefaultTimeout, r.cfg.MaxTimeout)
	if err != nil {
		return sandbox.Result{}, err
	}
	limit := spec.OutputCap
	if limit == 0 {
		limit = r.cfg.OutputCap
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return sandbox.Result{}, sandbox.ErrClosed
	}
	r.runs.Add(1)
	r.mu.Unlock()
	defer r.runs.Done()
	defer r.trimLater()

	req := initproc.Req{
		Argv: spec.Argv, Shell: spec.Shell, Workdir: spec.Workdir, Stdin: spec.Stdin != nil,
		Env: sandbox.Env(r.path, r.cfg.EnvPassthrough, os.LookupEnv, r.commandEnv(spec.Env), sandbox.WithGitSafeConfig(r.cfg.GitSafeConfig),
			sandbox.WithEgress(sandbox.EgressPort, r.egress != nil)),
		TimeoutMS: spec.Timeout.Milliseconds(),
		Egress:    r.egressReq(spec),
	}
	if r.gvisor {
		req.MemoryLimit = r.cfg.EffectiveMemoryMB() << 20 // enforced by init there (gvisor.go)
	}
	res, _, err := r.exchange(ctx, req, exchange{
		data: spec.Stdin, ro: spec.ReadOnly, timeout: spec.Timeout, limit: limit,
		workdir: spec.Workdir, onOutput: spec.OnOutput,
	})
	return res, err
}

// exchange is how one request is handed over and read back.
type exchange struct {
	// data follows the request as Data frames when req says so (stdin,
	// a file's content).
	data     []byte
	ro       bool // the read-only pool
	timeout  time.Duration
	limit    int
	workdir  string
	onOutput func(sandbox.Stream, []byte)
	key      []byte // the request's key (set by exchange)
	// reusable: the request runs nothing of the agent's (a write), so the
	// container may serve the next request when init says it can.
	reusable bool
	// gate, for a gated write, is waited for once the content is sent:
	// its outcome goes to init as the Commit frame.
	gate func() error
	// temps, for a write, receives the temporary file name of each
	// attempt.
	temps *[]string
}

// exchange runs req in a warm container, retrying in another one when a
// container dies before it takes the request. The status is nil when
// init sent none.
func (r *Runner) exchange(ctx context.Context, req initproc.Req, x exchange) (sandbox.Result, *initproc.Status, error) {
	// A fresh key seals the status init sends back (see initproc): a
	// frame the command forges on init's stdout is refused.
	req.Key = make([]byte, initproc.KeyLen)
	rand.Read(req.Key)
	x.key = req.Key
	stream := req.Stdin || req.Write != nil
	for attempt := 1; ; attempt++ {
		if req.Write != nil {
			// A temporary file name of its own for each attempt (the one
			// before may have been taken after all), noted for removal.
			w := *req.Write
			w.Temp = initproc.TempName()
			req.Write = &w
			if x.temps != nil {
				*x.temps = append(*x.temps, w.Temp)
			}
		}
		payload, err := json.Marshal(req)
		if err != nil {
			return sandbox.Result{}, nil, fmt.Errorf("encoding request: %w", err)
		}
		frame := initproc.AppendFrame(nil, initproc.Request, payload)
		res, st, unused, err := r.runOnce(ctx, x, frame, stream)
		if !unused || attempt == maxAttempts || ctx.Err() != nil {
			return res, st, err
		}
		// The container died before it took the request (it never said
		// so): nothing ran, so another one may.
		r.log.Warn("retrying in another container", "container", shortID(res.ContainerID), "err", err)
	}
}

// maxAttempts bounds hand-overs of one command to containers that die
// before taking it.
const maxAttempts = 3

// runOnce hands frame (and, when stream is set, x.data as Data frames) to
// one container and reads the run back. unused reports that the
// container ended before acknowledging the request.
func (r *Runner) runOnce(ctx context.Context, x exchange, frame []byte, stream bool) (_ sandbox.Result, _ *initproc.Status, unused bool, _ error) {
	p := r.pools[0]
	if x.ro {
		p = r.pools[1]
	}
	w, err := r.handOver(ctx, frame, p, x.reusable)
	if err != nil {
		return sandbox.Result{}, nil, false, err
	}
	start := time.Now()
	sent := make(chan error, 1)
	if stream {
		// Sent while the output is read, so that neither side waits on
		// the other; closing the stream (below) ends it early.
		go func() {
			err := initproc.WriteData(w.conn, x.data)
			if err == nil && x.gate != nil {
				var why []byte
				if gerr := x.gate(); gerr != nil {
					why = []byte(gerr.Error())
					if len(why) == 0 {
						why = []byte("the gate failed")
					}
				}
				err = initproc.WriteFrame(w.conn, initproc.Commit, why)
			}
			sent <- err
		}()
	} else {
		sent <- nil
	}
	reused := false
	defer func() {
		r.mu.Lock()
		delete(r.running, w.id)
		r.mu.Unlock()
		if reused {
			return
		}
		r.refillNow(p)
		w.conn.Close()
		r.remove(w.id)
	}()

	var timedOut, canceled, killed atomic.Bool
	killOnce := func() {
		if killed.CompareAndSwap(false, true) {
			r.kill(w.id)
			// If the stream does not end after the kill, stop waiting.
			w.conn.SetReadDeadline(time.Now().Add(killGrace))
		}
	}
	timer := time.AfterFunc(x.timeout, func() { timedOut.Store(true); killOnce() })
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() { canceled.Store(true); killOnce() })
	defer stopCtx()

	out, errb := sandbox.NewCapture(x.limit), sandbox.NewCapture(x.limit)
	var st *initproc.Status
	var readErr error
	started := false
	for st == nil {
		t, p, err := initproc.ReadFrame(w.frames)
		if err != nil {
			readErr = err
			break
		}
		switch t {
		case initproc.Started:
			started = true
		case initproc.Stdout, initproc.Stderr:
			s, c := sandbox.Stdout, out
			if t == initproc.Stderr {
				s, c = sandbox.Stderr, errb
			}
			c.Write(p)
			if x.onOutput != nil {
				x.onOutput(s, p)
			}
		case initproc.Exit:
			s, err := initproc.OpenExit(x.key, p)
			if err != nil {
				// Not ErrUnavailable ("nothing was run"): init took the
				// request, so the command ran, and wrote this frame
				// itself (gVisor lets it reach init's stdout). Its
				// status is unknown; its changes are the call's.
				return sandbox.Result{}, nil, false, fmt.Errorf("container %s: the command ran but its exit status is unknown (a frame on init's stream is not init's): %w", shortID(w.id), err)
			}
			st = &s
		case initproc.Fatal:
			return sandbox.Result{}, nil, false, fmt.Errorf("container %s: init failed: %s", shortID(w.id), p)
		default:
			readErr = fmt.Errorf("%w: unexpected %q", initproc.ErrFrame, t)
		}
		if readErr != nil {
			break
		}
	}
	res := sandbox.Result{
		Stdout: out.Bytes(), Stderr: errb.Bytes(),
		StdoutDropped: out.Dropped(), StderrDropped: errb.Dropped(),
		Cwd: x.workdir, Duration: time.Since(start), ContainerID: w.id,
	}
	// Neither the timeout nor the caller's cancel may kill the container
	// (or set its read deadline) once it is given back to serve another
	// request: both are stopped first, and a container one of them has
	// already fired for (even if its kill is still on its way, so that
	// killed is not set yet) is not given back.
	quiet := timer.Stop()
	quiet = stopCtx() && quiet
	switch {
	case st != nil: // completed, even if a kill raced with the end
		r.log.Debug("ran", "container", shortID(w.id), "total", res.Duration, "in_init", time.Duration(st.InitMicros)*time.Microsecond)
		if st.Reusable && x.reusable && quiet && !killed.Load() {
			// Init read the content to its end before it answered: the
			// sender is done, and nothing of this request is left on the
			// stream for the next one.
			if err := <-sent; err == nil {
				reused = r.giveBack(p, w)
			}
		}
		res.ExitCode, res.Signal, res.OOMKilled = st.Code, st.Signal, st.OOM
		if st.Cwd != "" && config.Within(st.Cwd, r.workspace) {
			res.Cwd = st.Cwd
		}
		return res, st, false, nil
	case killed.Load():
		res.ExitCode, res.Signal, res.Killed = 137, "SIGKILL", true
		if timedOut.Load() {
			res.TimedOut = true
			return res, nil, false, fmt.Errorf("%w after %s", sandbox.ErrTimeout, x.timeout)
		}
		return res, nil, false, fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		res.ExitCode, res.Signal, res.Killed = 137, "SIGKILL", true
		return res, nil, false, fmt.Errorf("%w: killed by Close", sandbox.ErrClosed)
	}
	// The stream ended without a status: init itself died (the OOM
	// killer may pick it) or the engine failed.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ins, err := r.cli.ContainerInspect(ictx, w.id); err == nil && ins.State != nil && !ins.State.Running {
		res.ExitCode, res.OOMKilled = ins.State.ExitCode, ins.State.OOMKilled
		if res.ExitCode > 128 {
			res.Signal = initproc.SignalName(syscall.Signal(res.ExitCode - 128))
		}
		if res.OOMKilled {
			return res, nil, false, nil
		}
	}
	if readErr == nil || errors.Is(readErr, io.EOF) {
		readErr = io.ErrUnexpectedEOF
	}
	return res, nil, !started, fmt.Errorf("container %s ended without reporting a status: %w", shortID(w.id), readErr)
}

// handOver takes a warm container of p's flavour (or starts one when the
// pool is empty) and sends it the request. The stream stays open: init
// kills the command when it ends (the executor died or gave up).
func (r *Runner) handOver(ctx context.Context, frame []byte, p *pool, write bool) (*warm, error) {
	fp, err := r.fingerprint(p.ro)
	if err != nil {
		r.log.Warn("refusing to hand over a command", "err", err)
		return nil, err
	}
	var writers chan *warm // a write takes a writers' container first
	if write {
		writers = p.writers
	}
	for {
		var w *warm
		var err error
		select {
		case w = <-writers:
		default:
			select {
			case w = <-p.ready:
				r.refillSoon(p)
			default:
			}
		}
		if w == nil {
			if w, err = r.start(ctx, p.ro); err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("%w: %w", sandbox.ErrCanceled, context.Cause(ctx))
				}
				return nil, err
			}
		} else if w.fp != fp {
			// Made before a protected path appeared or changed: its
			// read-only mounts are stale.
			w.conn.Close()
			r.remove(w.id)
			continue
		}
		r.mu.Lock()
		r.running[w.id] = w
		closed := r.closed
		r.mu.Unlock()
		if closed {
			r.release(w)
			return nil, sandbox.ErrClosed
		}
		w.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err = w.conn.Write(frame)
		w.conn.SetWriteDeadline(time.Time{})
		if err != nil {
			// A dead warm container: nothing ran; try the next one.
			r.log.Warn("handing over to a warm container", "container", shortID(w.id), "err", err)
			r.release(w)
			continue
		}
		return w, nil
	}
}

// giveBack returns w, which served a request that ran nothing of the
// agent's (a write) and whose init takes another one: to p's writers
// while they have room (kept for the next writes, which then never wait
// for a start), else to p's warm containers in place of a pending
// refill. It reports false (the caller removes w) when the Runner is
// closing or p is full.
func (r *Runner) giveBack(p *pool, w *warm) bool {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return false
	}
	w.conn.SetReadDeadline(time.Time{})
	select {
	case p.writers <- w: // nil for the read-only pool: never ready
		// Kept for writes; the refill its hand-over asked for (when it
		// came from ready) goes on.
		if r.ctx.Err() != nil { // raced with Close: it may have drained already
			r.drain(p)
		}
		return true
	default:
	}
	select {
	case p.ready <- w:
	default:
		return false
	}
	// The hand-over's pending refill is not needed any more.
	p.refillMu.Lock()
	if p.pendingRefills > 0 {
		p.pendingRefills--
	}
	p.refillMu.Unlock()
	if r.ctx.Err() != nil { // raced with Close: it may have drained already
		r.drain(p)
	}
	return true
}

func (r *Runner) release(w *warm) {
	r.mu.Lock()
	delete(r.running, w.id)
	r.mu.Unlock()
	w.conn.Close()
	r.remove(w.id)
}
