package docker

import (
	"context"
	"sync"
	"time"
)

// maxParallelStarts bounds concurrent container starts of one pool.
const maxParallelStarts = 2

// pool is the warm containers of one flavour (read-write or read-only
// workspace). Both flavours are kept warm: the common read-only call and
// the mutating call each find a started container waiting.
type pool struct {
	ro     bool
	ready  chan *warm
	tokens chan struct{} // each token is one container to start
	// writers (read-write pool only) holds containers that served a
	// write and, nothing of the agent's having run in them, serve only
	// writes from then on (giveBack): a write then never waits for a
	// container start when commands have drained ready.
	writers chan *warm

	refillMu       sync.Mutex
	pendingRefills int
}

// fill keeps p full. Run takes a warm container and gives a token back at
// once, so the refill overlaps the command.
func (r *Runner) fill(p *pool) {
	defer r.fillers.Done()
	sem := make(chan struct{}, maxParallelStarts)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-p.tokens:
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
			w, err := r.start(ctx, p.ro)
			cancel()
			if err != nil {
				if r.ctx.Err() != nil {
					return
				}
				n := r.fails.Add(1)
				delay := min(250*time.Millisecond<<min(n, 7), 30*time.Second)
				r.log.Warn("starting a pool container", "read_only", p.ro, "err", err, "retry_in", delay)
				select {
				case <-time.After(delay):
				case <-r.ctx.Done():
					return
				}
				r.giveToken(p)
				return
			}
			r.fails.Store(0)
			select {
			case p.ready <- w:
				if r.ctx.Err() != nil { // raced with Close: it may have drained already
					r.drain(p)
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

// refillSoon starts a refill of p after refillDelay or when the running
// command ends (Run calls r.refillNow), whichever comes first.
func (r *Runner) refillSoon(p *pool) {
	p.refillMu.Lock()
	p.pendingRefills++
	p.refillMu.Unlock()
	time.AfterFunc(refillDelay, func() { r.refillNow(p) })
}

// refillNow releases one pending refill of p, if any.
func (r *Runner) refillNow(p *pool) {
	p.refillMu.Lock()
	if p.pendingRefills == 0 {
		p.refillMu.Unlock()
		return
	}
	p.pendingRefills--
	p.refillMu.Unlock()
	r.giveToken(p)
}

func (r *Runner) giveToken(p *pool) {
	select {
	case p.tokens <- struct{}{}:
	default:
	}
}

// writerSlots bounds the containers kept for writes alone (pool.writers).
const writerSlots = 2

// drain removes every warm container waiting in p.
func (r *Runner) drain(p *pool) {
	for {
		select {
		case w := <-p.ready:
			w.conn.Close()
			r.remove(w.id)
		case w := <-p.writers: // nil for the read-only pool: never ready
			w.conn.Close()
			r.remove(w.id)
		default:
			return
		}
	}
}

// KeptForWrites is the number of containers kept for writes alone
// (pool.writers): each served a write, none ran anything of the agent's.
func (r *Runner) KeptForWrites() int {
	n := 0
	for _, p := range r.pools {
		n += len(p.writers)
	}
	return n
}

// Warm is the number of warm containers waiting, both flavours together.
func (r *Runner) Warm() int {
	n := 0
	for _, p := range r.pools {
		n += len(p.ready)
	}
	return n
}

// WaitWarm waits until each flavour's pool holds n warm containers (at
// most the configured pool size) and no container removal is in flight,
// or ctx ends: the state of a pool between an agent's calls.
func (r *Runner) WaitWarm(ctx context.Context, n int) error {
	n = min(n, r.cfg.PoolSize)
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for len(r.pools[0].ready) < n || len(r.pools[1].ready) < n || r.removing.Load() > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil
}
