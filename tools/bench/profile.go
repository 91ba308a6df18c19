package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// phaseLog is a slog.Handler that keeps every duration attribute of the
// debug records it sees, by message and key: the per-phase timings the
// sandbox and the tool pipeline log ("container ready": create, attach,
// start, …). `bench … --profile` prints them.
type phaseLog struct {
	mu    *sync.Mutex
	order *[]string
	d     map[string][]time.Duration
}

func newPhaseLog() *phaseLog {
	return &phaseLog{mu: &sync.Mutex{}, order: &[]string{}, d: map[string][]time.Duration{}}
}

func (h *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *phaseLog) WithGroup(string) slog.Handler            { return h }

func (h *phaseLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() != slog.KindDuration {
			return true
		}
		k := r.Message + "\t" + a.Key
		if _, ok := h.d[k]; !ok {
			*h.order = append(*h.order, k)
		}
		h.d[k] = append(h.d[k], a.Value.Duration())
		return true
	})
	return nil
}

// reset forgets what was collected so far.
func (h *phaseLog) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.order = (*h.order)[:0]
	clear(h.d)
}

// print writes one line per event and phase: count, p50, p95, mean.
func (h *phaseLog) print(w io.Writer, title string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "\nprofile: %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "event\tphase\tn\tp50 ms\tp95 ms\tmean ms\t")
	for _, k := range *h.order {
		d := h.d[k]
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		ev, ph, _ := strings.Cut(k, "\t")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t\n", ev, ph, len(d), pct(d, 50), pct(d, 95),
			float64(sum.Microseconds())/1000/float64(len(d)))
	}
	tw.Flush()
}

// cpuTimes is the CPU time this process and the whole host have used so
// far: the executor's own share of a window, and everything else
// (engine, shims, runtimes, other load) beside it.
type cpuTimes struct {
	self, host time.Duration
	// daemons is the engine's daemons (dockerd, containerd: exact);
	// reaped the shims, runtimes and containers (live shims, plus what
	// PID 1 reaped: shims exit as orphans, so any other orphan on the
	// host counts too).
	daemons, reaped time.Duration
	at              time.Time
}

// engineProcs are the engine's processes (as /proc/PID/comm shows them).
var engineProcs = map[string]bool{"dockerd": true, "containerd": true, "containerd-shim": true, "runc": true, "conmon": true, "podman": true}

const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux

// procCPU is a process's CPU time (user+system) and that of its reaped
// children, from /proc/PID/stat.
func procCPU(pid string) (own, children time.Duration, comm string) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return 0, 0, ""
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 15 {
		return 0, 0, ""
	}
	n := func(k int) time.Duration { v, _ := strconv.ParseInt(f[k], 10, 64); return time.Duration(v) * tick }
	return n(11) + n(12), n(13) + n(14), s[i+1 : j]
}

func readCPU() cpuTimes {
	c := cpuTimes{at: time.Now()}
	c.self, _, _ = procCPU("self")
	_, c.reaped, _ = procCPU("1")
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			own, ch, comm := procCPU(e.Name())
			switch {
			case comm == "dockerd" || comm == "containerd" || comm == "podman":
				c.daemons += own + ch
			case engineProcs[comm]:
				c.reaped += own + ch
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i, v := range f[1:] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			if i > 7 {
				break
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			c.host += time.Duration(n) * tick
		}
	}
	return c
}

// perItem describes the CPU used between a and b, per item.
func (a cpuTimes) perItem(b cpuTimes, items int) string {
	wall := b.at.Sub(a.at)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(items) }
	return fmt.Sprintf("per container: engine daemons CPU %.1f ms, shims+runtime+container CPU ~%.1f ms (what PID 1 reaped: other orphans count too), executor CPU %.1f ms, host CPU %.1f ms (all processes, other load included; %.2f of %d cores busy)",
		ms(b.daemons-a.daemons), ms(b.reaped-a.reaped), ms(b.self-a.self), ms(b.host-a.host), float64(b.host-a.host)/float64(wall), numCPU())
}

func numCPU() int {
	n := 0
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "cpu") && !strings.HasPrefix(l, "cpu ") {
				n++
			}
		}
	}
	return max(n, 1)
}
