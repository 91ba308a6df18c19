//go:build integration

package integration

import "time"

// eventually calls cond every interval until it returns true, and then
// returns true; once within has passed it returns false. The caller fails
// the test with its own message, after whatever cleanup a failure needs
// (killing a process it started), and cond may fail the test itself.
func eventually(within, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
