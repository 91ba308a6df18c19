package docker

import (
	"context"
	"time"
)

// maxParallelStarts bounds concurrent container starts of one pool.
const maxParallelStarts = 2

// fill keeps the pool full: each token is one container to start. Run
// takes a warm container and gives a token back at once, so the refill
// overlaps the command.
func (r *Runner) fill() {
	defer r.fillers.Done()
	sem := make(chan struct{}, maxParallelStarts)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.tokens:
		}
		select {
		case <-r.ctx.Done():
			return
		case sem <- struct{}{}:
		}
		r.fillers.Add(1)
		go func() {
			defer r.fillers.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(r.ctx, readyTimeout)
			w, err := r.start(ctx)
			cancel()
			if err != nil {
				if r.ctx.Err() != nil {
					return
				}
				n := r.fails.Add(1)
				delay := min(250*time.Millisecond<<min(n, 7), 30*time.Second)
				r.log.Warn("starting a pool container", "err", err, "retry_in", delay)
				select {
				case <-time.After(delay):
				case <-r.ctx.Done():
					return
				}
				r.giveToken()
				return
			}
			r.fails.Store(0)
			select {
			case r.ready <- w:
				if r.ctx.Err() != nil { // raced with Close: it may have drained already
					r.drain()
				}
			default: // pool already full (should not happen)
				w.conn.Close()
				r.remove(w.id)
			}
		}()
	}
}

// refillDelay defers a refill so that starting the next container does
// not compete for the CPU with a short command that just started.
const refillDelay = 250 * time.Millisecond

// refillSoon starts a refill after refillDelay or when the running
// command ends (Run calls r.refillNow), whichever comes first.
func (r *Runner) refillSoon() {
	r.refillMu.Lock()
	r.pendingRefills++
	r.refillMu.Unlock()
	time.AfterFunc(refillDelay, r.refillNow)
}

// refillNow releases one pending refill, if any.
func (r *Runner) refillNow() {
	r.refillMu.Lock()
	if r.pendingRefills == 0 {
		r.refillMu.Unlock()
		return
	}
	r.pendingRefills--
	r.refillMu.Unlock()
	r.giveToken()
}

func (r *Runner) giveToken() {
	select {
	case r.tokens <- struct{}{}:
	default:
	}
}

// drain removes every warm container waiting in the pool.
func (r *Runner) drain() {
	for {
		select {
		case w := <-r.ready:
			w.conn.Close()
			r.remove(w.id)
		default:
			return
		}
	}
}

// Warm is the number of warm containers waiting in the pool.
func (r *Runner) Warm() int { return len(r.ready) }

// WaitWarm waits until the pool holds n warm containers (at most the
// configured pool size) and no container removal is in flight, or ctx
// ends: the state of a pool between an agent's calls.
func (r *Runner) WaitWarm(ctx context.Context, n int) error {
	n = min(n, r.cfg.PoolSize)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for len(r.ready) < n || r.removing.Load() > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil
}
