package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
)

// Snapshots is a workspace's one snapshot store as the tools see it,
// opened on first use with every snapshot setting of the config. The
// pipeline's snapshot stage begins its calls here (tools.Snapshotter),
// the MCP History and Undo tools read and revert the journal here
// (List, Undo), and `agentbox exec` journals its command here (Journal).
// Safe for concurrent use.
type Snapshots struct {
	cfg *config.Config
	log *slog.Logger
	mu  sync.Mutex // held while the store opens

	// opened is the store once open, read without mu.
	opened  atomic.Pointer[snapshot.Store]
	feed    subscription // the sandbox's entry changes (entryChanges)
	cfeed   subscription // the closure cache's (closureChanges)
	closure *config.ClosureCache
}

// subscription is one subscriber's entry-change feed of the store.
type subscription struct {
	mu sync.Mutex
	f  *snapshot.EntryChanges
}

// NewSnapshots returns the (not yet opened) store of cfg's workspace;
// log may be nil.
func NewSnapshots(cfg *config.Config, log *slog.Logger) *Snapshots {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Snapshots{cfg: cfg, log: log}
	l.closure = cfg.ClosureCache(l.closureChanges)
	return l
}

// Closure is the host-run closure of the workspace now
// (config.ClosureCache over the store's entry changes): what the Write and
// Edit question and the store's guard judge against.
func (l *Snapshots) Closure() *config.Closure { return l.closure.Get() }

// Snapshots is the workspace's snapshot store, the one every call of
// this Tools is journaled in.
func (s *Tools) Snapshots() *Snapshots { return s.snaps }

// Begin implements tools.Snapshotter.
func (l *Snapshots) Begin(ctx context.Context, info tools.SnapshotInfo, scope tools.Scope) (tools.SnapshotCall, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return snapshotStore{Store: st}.Begin(ctx, info, scope)
}

// BeginDetached implements tools.DetachedSnapshotter.
func (l *Snapshots) BeginDetached(ctx context.Context, info tools.SnapshotInfo) (tools.SnapshotCall, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return snapshotStore{Store: st}.BeginDetached(ctx, info)
}

// Journal runs act as one journaled change of the whole workspace outside
// the tool pipeline (`agentbox exec`): the snapshot is begun here and
// ended by the rule of every tool call (tools.EndSnapshot). act reports
// whether it acted (false: it refused before doing anything, and no entry
// is written). The entry is nil when none was written.
func (l *Snapshots) Journal(ctx context.Context, info tools.SnapshotInfo, act func(ctx context.Context) (acted bool)) (*tools.JournalEntry, error) {
	snap, err := l.Begin(ctx, info, tools.Scope{Kind: tools.ScopeWorkspace})
	if err != nil {
		return nil, fmt.Errorf("snapshot before the command: %w", err)
	}
	e, err := tools.EndSnapshot(ctx, snap, act(ctx))
	if err != nil {
		return nil, fmt.Errorf("snapshot after the command: %w", err)
	}
	return e, nil
}

// List returns the newest limit journal entries (0: all), newest first.
func (l *Snapshots) List(ctx context.Context, limit int) ([]tools.JournalEntry, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	es, err := st.List(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]tools.JournalEntry, 0, len(es))
	for _, e := range es {
		out = append(out, journalEntry(e))
	}
	return out, nil
}

// Undo reverts entry id and journals the undo as info's. With id "" it
// reverts the newest entry of info's session (of any session when info
// has none) that changed something and has not been undone: an agent's
// "undo the last call" never reverts another session's work. It fails
// with a *tools.UndoConflictError when a path changed since,
// tools.ErrNoEntry or tools.ErrNothingToUndo.
func (l *Snapshots) Undo(ctx context.Context, id string, info tools.SnapshotInfo) (tools.JournalEntry, error) {
	st, err := l.get(ctx)
	if err != nil {
		return tools.JournalEntry{}, err
	}
	// The store picks the session's newest call under its lock: no other
	// undo can take it between the choice and the undo.
	e, err := st.Undo(ctx, id, false, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary})
	if id == "" && info.Session != "" && errors.Is(err, snapshot.ErrNotFound) {
		return tools.JournalEntry{}, fmt.Errorf("%w: this session has no call left to undo (calls of other sessions are undone by their id)", tools.ErrNothingToUndo)
	}
	if err != nil {
		return tools.JournalEntry{}, undoError(err)
	}
	return journalEntry(e), nil
}

// get opens the store with every snapshot setting of the config.
func (l *Snapshots) get(ctx context.Context) (*snapshot.Store, error) {
	if st := l.opened.Load(); st != nil {
		return st, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.opened.Load(); st != nil {
		return st, nil
	}
	st, err := snapshot.OpenConfig(ctx, l.cfg, snapshot.WithLogger(l.log),
		snapshot.WithProtection(snapshot.ProtectClosure(l.closure.Get)),
		snapshot.WithContentProtection(snapshot.ContentClosure(l.closure.Get)))
	if err != nil {
		return nil, err
	}
	l.opened.Store(st)
	return st, nil
}

// entryChanges is the sandbox's entry-change feed
// (sandbox.OpenOptions.EntryChanges) over the store's change capture
// watcher. It vouches for nothing until the store is open with a watcher:
// the first call after that subscribes and still says no (the sandbox
// walks once, after the subscription began); later calls return what the
// watcher saw since the previous one, or no when it lost events.
func (l *Snapshots) entryChanges() (map[string]bool, bool) { return l.take(&l.feed) }

// closureChanges is the closure cache's entry-change feed
// (config.ChangeFeed), with the rules of entryChanges.
func (l *Snapshots) closureChanges() (map[string]bool, bool) { return l.take(&l.cfeed) }

// take subscribes sub once the store is open with a watcher (and says no
// then), and later returns what the watcher saw since the previous take.
func (l *Snapshots) take(sub *subscription) (map[string]bool, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.f == nil {
		st := l.opened.Load()
		if st == nil {
			return nil, false
		}
		f, err := st.EntryChanges()
		if err != nil {
			return nil, false
		}
		sub.f = f
		return nil, false
	}
	paths, lost := sub.f.Take()
	return paths, lost == ""
}

// Close closes the store if it was opened.
func (l *Snapshots) Close() error {
	for _, sub := range []*subscription{&l.feed, &l.cfeed} {
		sub.mu.Lock()
		if sub.f != nil {
			sub.f.Close()
			sub.f = nil
		}
		sub.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.opened.Load(); st != nil {
		return st.Close()
	}
	return nil
}
