package initproc

import (
	"bytes"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// The memory limit inside gVisor.
//
// Under runc the kernel's memory cgroup kills the largest process of a
// container that outgrows its limit, and init reports it (Status.OOM).
// Under gVisor the host cgroup sees only the Sentry: every page the
// command touches is the Sentry's, so the host OOM killer takes the
// whole sandbox (init included) and the call ends without a status; and
// the Sentry (Debian's 2022 runsc) enforces no memory cgroup of its own.
// So there the executor gives the host cgroup room for the Sentry's own
// needs on top of the limit, sends the limit in the request
// (Req.MemoryLimit), and init enforces it the way the memory cgroup
// does: while the command runs it reads the Sentry's accounting of
// application memory (AnonPages in /proc/meminfo: anonymous memory and
// tmpfs, what the cgroup charges and cannot reclaim) every memPoll, and
// when it exceeds the limit it kills the process with the largest
// resident set (never init) and reports an OOM kill. The host limit stays
// as the backstop: a bomb faster than a poll meets it, contained, and
// the executor reports that OOM kill from the engine.

// memPoll is how often init reads the memory accounting.
const memPoll = 10 * time.Millisecond

// memWatch enforces a memory limit from inside the sandbox.
type memWatch struct {
	limit   int64 // bytes
	meminfo string
	proc    string
	kills   atomic.Int32
	stop    chan struct{}
	done    chan struct{}
}

// watchMemory starts enforcing limit (bytes) until stop is called.
func watchMemory(limit int64) *memWatch {
	w := &memWatch{limit: limit, meminfo: "/proc/meminfo", proc: "/proc", stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *memWatch) loop() {
	defer close(w.done)
	t := time.NewTicker(memPoll)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if used, ok := anonBytes(w.meminfo); ok && used > w.limit {
			if pid := largestProcess(w.proc); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				w.kills.Add(1)
			}
		}
	}
}

// finish stops the watch and returns how many processes it killed.
func (w *memWatch) finish() int {
	close(w.stop)
	<-w.done
	return int(w.kills.Load())
}

// anonBytes reads AnonPages from a meminfo file.
func anonBytes(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("AnonPages:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// largestProcess returns the pid (not init's) with the largest resident
// set under the proc directory, 0 when there is none.
func largestProcess(proc string) int {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return 0
	}
	self := os.Getpid()
	best, bestRSS := 0, int64(-1)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		b, err := os.ReadFile(proc + "/" + e.Name() + "/statm")
		if err != nil {
			continue // gone meanwhile
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		rss, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err == nil && rss > bestRSS {
			best, bestRSS = pid, rss
		}
	}
	return best
}
