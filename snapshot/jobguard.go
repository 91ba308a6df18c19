package snapshot

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// The live guard.
//
// A background job (a Detached call begun with BeginDetached) runs while
// other calls come and go, and its changes are judged when it ends. A
// change it makes to a protected path (a .envrc, a .vscode/tasks.json that
// runs on folder open) must not wait for that: while at least one job of
// this process is open, the store reverts protected changes as they
// happen. With the change capture's watcher (CaptureAuto with
// CAP_SYS_ADMIN) every path the kernel reports is matched against the
// protected set at once; a protected one (or a directory created or moved
// into the workspace, which may hold one) triggers a sweep: the shell
// lock (not while a foreground shell command runs: its own changes are
// judged, and may be approved, when it returns; the sweep runs right
// after), the store lock, a scan from the manifest, and guardDrift's
// revert of the protected drift, nobody asked (no call made it; an
// approved Write or Edit updates the manifest under the store lock, so it
// is never drift). Without a watcher the sweep polls: every half second, or
// every four scan durations when a full scan takes longer.
//
// A reverted change is in no entry's Changes (the job's own post-scan
// finds the path as it was); it is listed in the Reverted of the entry of
// every job that was open when it was reverted (which job made it is not
// known when several run).

// liveGuard is a store's set of open background jobs of this process and
// the goroutine that guards them.
type liveGuard struct {
	mu   sync.Mutex
	open map[*Detached][]Protected // job → what the guard reverted while it ran
	stop chan struct{}             // closes the goroutine (nil: none runs)
	done chan struct{}
}

// livePoll is the polling interval; liveRetry is without a watcher, and the retry
// the interval after a sweep that could not run.
const (
	livePoll  = 500 * time.Millisecond
	liveRetry = 100 * time.Millisecond
)

// addLive registers d and starts the guard if it is the first.
func (s *Store) addLive(d *Detached) {
	if s.opts.protect == nil {
		return
	}
	g := &s.live
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = map[*Detached][]Protected{}
	}
	g.open[d] = nil
	if g.stop == nil {
		g.stop, g.done = make(chan struct{}), make(chan struct{})
		// Paths are followed from now on, before the job's command runs.
		var w *watcher
		if c := s.cap; c != nil {
			c.mu.Lock()
			w = c.w
			c.mu.Unlock()
		}
		if w != nil {
			w.followRecent(true)
		}
		go s.runLive(w, g.stop, g.done)
	}
}

// dropLive unregisters d and returns what the guard reverted while d was
// open; the guard stops with the last job.
func (s *Store) dropLive(d *Detached) []Protected {
	g := &s.live
	g.mu.Lock()
	rev, ok := g.open[d]
	delete(g.open, d)
	var stop, done chan struct{}
	if ok && len(g.open) == 0 && g.stop != nil {
		stop, done = g.stop, g.done
		g.stop, g.done = nil, nil
	}
	g.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return rev
}

// liveReverted returns what the guard reverted while d was open so far.
func (s *Store) liveReverted(d *Detached) []Protected {
	g := &s.live
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Protected(nil), g.open[d]...)
}

// stopLive stops the guard (Close).
func (s *Store) stopLive() {
	g := &s.live
	g.mu.Lock()
	stop, done := g.stop, g.done
	g.stop, g.done = nil, nil
	g.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// runLive is the guard's goroutine (see the live guard above).
func (s *Store) runLive(w *watcher, stop, done chan struct{}) {
	defer close(done)
	var poked <-chan struct{}
	if w != nil {
		defer w.followRecent(false)
		poked = w.poked()
	}
	pending := false
	wait := livePoll
	for {
		var t *time.Timer
		var tick <-chan time.Time
		if w == nil || pending {
			t = time.NewTimer(wait)
			tick = t.C
		}
		select {
		case <-stop:
			return
		case <-poked:
		case <-tick:
		}
		if t != nil {
			t.Stop()
		}
		if w != nil && !pending {
			pending = s.liveRelevant(w.recentPaths())
			if !pending {
				continue
			}
		}
		start := time.Now()
		if !s.sweepLive(stop) {
			pending, wait = true, liveRetry
			continue
		}
		pending = false
		if w == nil {
			wait = max(livePoll, 4*time.Since(start))
		}
	}
}

// liveRelevant reports whether recent (path → a directory created or moved
// there) holds a protected path or a new directory.
func (s *Store) liveRelevant(recent map[string]bool) bool {
	if len(recent) == 0 {
		return false
	}
	protect, content := s.opts.protect(), s.contentFunc()
	for p, whole := range recent {
		// A path judged by content counts too: the sweep reads it.
		if whole || guarded(protect, content, p) {
			return true
		}
	}
	return false
}

// sweepLive scans and reverts protected drift (see the live guard). It
// reports false when it could not run (a foreground shell command holds
// the shell lock, or the store is busy for too long).
func (s *Store) sweepLive(stop <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	shell, err := s.flock(ctx, shellLockName, false)
	if err != nil || shell == nil {
		return false
	}
	defer shell.Close()
	unlock, err := s.lockShelled(ctx)
	if err != nil {
		return false
	}
	defer unlock()
	done, _ := s.startBudget(true, true)
	defer done()
	old, err := s.loadIndex()
	if err != nil {
		s.opts.log.Warn("snapshot: live guard", "err", err)
		return false
	}
	pre, err := s.scan(ctx, old)
	if err != nil {
		s.opts.log.Warn("snapshot: live guard", "err", err)
		return false
	}
	reverted := s.guardDrift(ctx, "live"+strconv.FormatInt(time.Now().UnixNano(), 36), old, pre)
	if pre != old {
		if _, err := s.saveIndex(pre); err != nil {
			s.opts.log.Warn("snapshot: live guard: saving manifest", "err", err)
		}
	}
	if len(reverted) > 0 {
		s.hook("live-reverted")
		g := &s.live
		g.mu.Lock()
		for d := range g.open {
			for _, r := range reverted {
				r.Reason += " (reverted as it happened, while this background job ran)"
				g.open[d] = append(g.open[d], r)
			}
		}
		g.mu.Unlock()
	}
	return true
}
