package snapshot

import "errors"

// ErrNoWatcher: the store has no change capture watcher (change_capture
// is scan, no CAP_SYS_ADMIN, a mount inside the workspace, or the store
// is closed), so it cannot report entry changes.
var ErrNoWatcher = errors.New("snapshot: no change capture watcher")

// EntryChanges follows the directory entries of the workspace through the
// change capture's watcher: which paths were created, removed or moved in
// or out. It exists for consumers that keep a set of paths current (the
// sandbox's unix sockets) without walking the tree.
type EntryChanges struct{ f *entryFeed }

// EntryChanges subscribes to the workspace's entry changes from now on.
// It fails with [ErrNoWatcher] when the store has no watcher. Close it when
// done.
func (s *Store) EntryChanges() (*EntryChanges, error) {
	c := s.cap
	if c == nil {
		return nil, ErrNoWatcher
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return nil, ErrNoWatcher
	}
	return &EntryChanges{f: c.w.subscribe()}, nil
}

// Take returns the workspace-relative paths ("/"-separated) whose entry
// changed since the previous Take (or the subscription), each mapped to
// whether the entry was a directory, and starts the next set empty.
//
// Every change whose system call returned before Take was called is in
// the set: the kernel queues the event inside that call, and Take reads
// the queue until it is empty. When the set cannot be trusted (the
// queue overflowed, a directory could not be resolved, the workspace
// moved, the watcher stopped) lost says why and the paths are
// incomplete: the caller must look at the whole tree.
func (e *EntryChanges) Take() (paths map[string]bool, lost string) {
	return e.f.take()
}

// Close ends the subscription.
func (e *EntryChanges) Close() { e.f.unsubscribe() }
