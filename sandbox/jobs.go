package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Jobs runs commands in the background (Bash run_in_background,
// BashOutput, KillShell). Implementations are safe for concurrent use.
type Jobs interface {
	// Start launches spec and returns its id at once.
	Start(ctx context.Context, spec Spec) (id string, err error)
	// Output returns the output produced since the previous call, and the
	// Result once the job is done.
	Output(id string) (JobOutput, error)
	// Kill kills a running job; killing a finished job is not an error.
	Kill(ctx context.Context, id string) error
	// List describes every job, oldest first.
	List() []JobStatus
}

// JobOutput is one read of a job's output.
type JobOutput struct {
	// Stdout and Stderr are new since the previous read (each within the
	// job's output cap: head and tail, with a marker when bytes dropped).
	Stdout, Stderr []byte
	// Done is true once the command has exited; Result is then set.
	Done   bool
	Result *Result
	// Err is why the job ended abnormally (wraps ErrTimeout, ErrCanceled,
	// ...), nil otherwise.
	Err error
}

// JobStatus describes a job for listings.
type JobStatus struct {
	ID      string
	Spec    Spec
	Started time.Time
	Done    bool
	Result  *Result
}

// JobTable implements [Jobs] on top of a [Runner]. Each job's new output is
// kept within the spec's OutputCap ([DefaultOutputCap] when 0) between reads.
type JobTable struct {
	runner Runner

	mu     sync.Mutex
	jobs   map[string]*job
	order  []string
	closed bool
	wg     sync.WaitGroup
}

type job struct {
	id      string
	spec    Spec
	started time.Time
	cancel  context.CancelFunc
	limit   int

	// guarded by JobTable.mu
	out, errb *Capture
	done      bool
	res       *Result
	err       error
	finished  chan struct{}
}

var _ Jobs = (*JobTable)(nil)

// NewJobs returns a [JobTable] running its jobs through r.
func NewJobs(r Runner) *JobTable {
	return &JobTable{runner: r, jobs: map[string]*job{}}
}

// Start launches spec in the background. The job outlives ctx (only
// ctx's values are kept); use Kill or Close to stop it.
func (t *JobTable) Start(ctx context.Context, spec Spec) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("job id: %w", err)
	}
	id := "job-" + hex.EncodeToString(b[:])
	limit := spec.OutputCap
	if limit == 0 {
		limit = DefaultOutputCap
	}
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &job{id: id, spec: spec, started: time.Now(), cancel: cancel, limit: limit,
		out: NewCapture(limit), errb: NewCapture(limit), finished: make(chan struct{})}
	user := spec.OnOutput
	spec.OnOutput = func(s Stream, p []byte) {
		t.mu.Lock()
		if s == Stderr {
			j.errb.Write(p)
		} else {
			j.out.Write(p)
		}
		t.mu.Unlock()
		if user != nil {
			user(s, p)
		}
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cancel()
		return "", ErrClosed
	}
	t.jobs[id] = j
	t.order = append(t.order, id)
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		defer cancel()
		res, err := t.runner.Run(jctx, spec)
		t.mu.Lock()
		j.done, j.res, j.err = true, &res, err
		t.mu.Unlock()
		close(j.finished)
	}()
	return id, nil
}

// Output returns the output since the previous read.
func (t *JobTable) Output(id string) (JobOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j, ok := t.jobs[id]
	if !ok {
		return JobOutput{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	o := JobOutput{Stdout: j.out.Bytes(), Stderr: j.errb.Bytes(), Done: j.done, Result: j.res, Err: j.err}
	j.out, j.errb = NewCapture(j.limit), NewCapture(j.limit)
	return o, nil
}

// Done returns a channel closed when job id's command has ended (nil for
// an unknown id).
func (t *JobTable) Done(id string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j, ok := t.jobs[id]; ok {
		return j.finished
	}
	return nil
}

// Kill kills the job and waits (within ctx) until it has ended.
func (t *JobTable) Kill(ctx context.Context, id string) error {
	t.mu.Lock()
	j, ok := t.jobs[id]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	j.cancel()
	select {
	case <-j.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// List describes every job, oldest first.
func (t *JobTable) List() []JobStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]JobStatus, 0, len(t.order))
	for _, id := range t.order {
		j := t.jobs[id]
		out = append(out, JobStatus{ID: id, Spec: j.spec, Started: j.started, Done: j.done, Result: j.res})
	}
	return out
}

// Close kills every job and waits for them (within ctx). It does not close
// the [Runner].
func (t *JobTable) Close(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	for _, j := range t.jobs {
		j.cancel()
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
