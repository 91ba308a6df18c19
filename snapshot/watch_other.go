//go:build !linux

package snapshot

import "errors"

// watcher is Linux-only (fanotify); elsewhere every scan is a full one.
type watcher struct{ inodes map[uint64][]string }

func startWatcher(string) (*watcher, error) {
	return nil, errors.New("snapshot: change capture needs Linux fanotify")
}

func (w *watcher) close()                                   {}
func (w *watcher) take() (map[string]bool, string)          { return nil, "no watcher" }
func (w *watcher) setInodes(map[uint64][]string)            {}
func (w *watcher) updateInodes(func(m map[uint64][]string)) {}
func (w *watcher) counters() (int64, int64, int64)          { return 0, 0, 0 }
func (w *watcher) pathsOf(uint64) []string                  { return nil }
func captureCheckMounts(string) string                      { return "" }
func (w *watcher) followRecent(bool)                        {}
func (w *watcher) recentPaths() map[string]bool             { return nil }
func (w *watcher) poked() <-chan struct{}                   { return nil }
