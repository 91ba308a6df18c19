package snapshot

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A job can overflow the fanotify queue on purpose (many writes) so that
// the event of the protected path it plants is dropped. The live guard
// follows recent paths only; an overflow, or any event the watcher cannot
// place, must wake it with the whole workspace, or the plant stays until
// the job ends.
func TestWatcherLostWakesLiveGuard(t *testing.T) {
	for _, tc := range []struct {
		name string
		mask uint64
		info []byte
	}{
		{"queue overflow", unix.FAN_Q_OVERFLOW, nil},
		{"malformed record", unix.FAN_CREATE, []byte{1, 0, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &watcher{dirty: map[string]bool{}, recent: map[string]bool{}, poke: make(chan struct{}, 1), cache: map[string]string{}}
			w.follow.Store(true)
			w.event(tc.mask, tc.info)
			if w.lost == "" {
				t.Fatal("the watcher did not mark its set lost")
			}
			if whole, ok := w.recent[""]; !ok || !whole {
				t.Errorf("recent paths after a lost event: %v; the live guard would not sweep", w.recent)
			}
			select {
			case <-w.poke:
			default:
				t.Error("the live guard was not woken")
			}
		})
	}
}
