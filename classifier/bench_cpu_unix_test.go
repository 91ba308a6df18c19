//go:build unix

package classifier

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) used by the process so far, so
// that the benchmark can report per-core throughput on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
