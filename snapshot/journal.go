package snapshot

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// rawString is a string that may hold any bytes (file names are bytes): it
// is JSON-encoded as a string when valid UTF-8, else as {"b64": ...}.
type rawString string

func (r rawString) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(r)) {
		return json.Marshal(string(r))
	}
	return json.Marshal(map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(r))})
}

func (r *rawString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(m["b64"])
		if err != nil {
			return err
		}
		*r = rawString(raw)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = rawString(s)
	return nil
}

type diskNode struct {
	Type       Type      `json:"type"`
	Mode       uint32    `json:"mode"`
	Size       int64     `json:"size,omitempty"`
	MTime      time.Time `json:"mtime"`
	Hash       string    `json:"hash,omitempty"`
	Link       rawString `json:"link,omitempty"`
	Unreadable bool      `json:"unreadable,omitempty"`
	Unstored   bool      `json:"unstored,omitempty"`
	// UID and GID are absent in records written before owners were kept.
	UID *uint32 `json:"uid,omitempty"`
	GID *uint32 `json:"gid,omitempty"`
}

type diskChange struct {
	Path rawString `json:"path"`
	Op   Op        `json:"op,omitempty"`
	Old  *diskNode `json:"old,omitempty"`
	New  *diskNode `json:"new,omitempty"`
}

type diskEntry struct {
	ID          string       `json:"id"`
	Time        time.Time    `json:"time"`
	Session     string       `json:"session"`
	Tool        string       `json:"tool"`
	Summary     string       `json:"summary"`
	Kind        Kind         `json:"kind"`
	Reverts     string       `json:"reverts,omitempty"`
	RollbackTo  string       `json:"rollback_to,omitempty"`
	Manifest    string       `json:"manifest,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	Detached    bool         `json:"detached,omitempty"`
	Began       time.Time    `json:"began,omitzero"`
	Overlapped  []rawString  `json:"overlapped,omitempty"`
	Changes     []diskChange `json:"changes"`
}

func toDiskNode(n *Node) *diskNode {
	if n == nil {
		return nil
	}
	d := &diskNode{Type: n.Type, Mode: n.Mode, Size: n.Size, MTime: n.MTime, Hash: n.Hash, Link: rawString(n.Link), Unreadable: n.Unreadable, Unstored: n.Unstored}
	if n.Owner != nil {
		uid, gid := n.Owner.UID, n.Owner.GID
		d.UID, d.GID = &uid, &gid
	}
	return d
}

func fromDiskNode(d *diskNode) *Node {
	if d == nil {
		return nil
	}
	n := &Node{Type: d.Type, Mode: d.Mode, Size: d.Size, MTime: d.MTime, Hash: d.Hash, Link: string(d.Link), Unreadable: d.Unreadable, Unstored: d.Unstored}
	if d.UID != nil && d.GID != nil {
		n.Owner = ownerOf(*d.UID, *d.GID)
	}
	return n
}

func toDiskChanges(cs []Change) []diskChange {
	out := make([]diskChange, len(cs))
	for i, c := range cs {
		out[i] = diskChange{Path: rawString(c.Path), Op: c.Op, Old: toDiskNode(c.Old), New: toDiskNode(c.New)}
	}
	return out
}

func fromDiskChanges(ds []diskChange) []Change {
	out := make([]Change, len(ds))
	for i, d := range ds {
		out[i] = Change{Path: string(d.Path), Op: d.Op, Old: fromDiskNode(d.Old), New: fromDiskNode(d.New)}
	}
	return out
}

func sortChanges(cs []Change) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Path < cs[j].Path })
}

const idWidth = 6

func formatID(n uint64) string { return fmt.Sprintf("%0*d", idWidth, n) }

func parseID(id string) (uint64, bool) {
	if id == "" || len(id) > 19 {
		return 0, false
	}
	n, err := strconv.ParseUint(id, 10, 64)
	return n, err == nil && n > 0
}

// NoCallError is a call ID the journal does not hold (or text that is no
// call ID at all, NotAnID). It wraps [ErrNotFound].
type NoCallError struct {
	ID      string
	NotAnID bool
}

func (e *NoCallError) Error() string {
	if e.NotAnID {
		return fmt.Sprintf("snapshot: %q is not a call ID: %v", e.ID, ErrNotFound)
	}
	return fmt.Sprintf("snapshot: call %s: %v", e.ID, ErrNotFound)
}

func (e *NoCallError) Unwrap() error { return ErrNotFound }

// resolveID turns what a person typed ("42", "000042") into an entry ID.
func resolveID(id string) (string, error) {
	n, ok := parseID(strings.TrimSpace(id))
	if !ok {
		return "", &NoCallError{ID: id, NotAnID: true}
	}
	return formatID(n), nil
}

// ids lists the IDs of the files in dir (names "<id>.json"), ascending.
func (s *Store) ids(dir string) ([]string, error) {
	des, err := os.ReadDir(s.path(dir))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var out []string
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok {
			if name, ok = strings.CutSuffix(de.Name(), ".json"+zSuffix); !ok {
				continue
			}
		}
		if _, ok := parseID(name); ok {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := parseID(out[i])
		b, _ := parseID(out[j])
		return a < b
	})
	return out, nil
}

// nextID allocates the next entry ID (under the lock).
func (s *Store) nextID() (string, error) {
	var max uint64
	for _, d := range []string{"journal", "pending"} {
		ids, err := s.ids(d)
		if err != nil {
			return "", err
		}
		if len(ids) > 0 {
			if n, _ := parseID(ids[len(ids)-1]); n > max {
				max = n
			}
		}
	}
	return formatID(max + 1), nil
}

// commitEntry makes every blob and the entry's content durable (flushed
// together), then renames the entry into place: that rename is the commit
// point. The journal directory is fsynced before it returns, so that
// whatever the caller removes next (the pending record) cannot outlive the
// entry's name in a power loss.
func (s *Store) commitEntry(e Entry) error {
	if err := s.writeEntry(e); err != nil {
		return err
	}
	if err := syncDir(s.path("journal")); err != nil {
		return fmt.Errorf("snapshot: journal %s: %w", e.ID, err)
	}
	return nil
}

// commitCallEntry is commitEntry for a call whose durable pending record
// stays until the entry's name is durable too: the journal directory is
// fsynced after the call returns (retirePending), off its critical path.
// Until then a power loss may lose the rename, never the record, and
// recovery completes the call again from the record (the same ID).
func (s *Store) commitCallEntry(e Entry) error { return s.writeEntry(e) }

// commitLazyEntry commits a file-scoped call's entry without waiting for
// the disk: the entry is written and renamed into place, and returns the
// entry's file name and the files it depends on (the blobs and manifest
// written since the last sync), which the flusher (flushLater) makes
// durable after the call returned, before it retires the call's pending
// record. The pending record and the pre-images were durable before the
// call ran (begin), so a power loss before the flush loses nothing: the
// record is still there, recovery finds the entry missing or unreadable
// and completes the call again from the record and the disk (the same
// ID), as for any interrupted call. Every later lock of the store waits
// for the flush first (lockWait), so no later call, undo or rollback can
// be durable while this entry is not.
func (s *Store) commitLazyEntry(e Entry) (name string, deps []string, err error) {
	if s.dirty.Load() {
		// Blobs of unknown origin may be unsynced: the slow, whole path.
		if err := s.syncStore(); err != nil {
			return "", nil, err
		}
	}
	name, data, err := s.encodeEntry(e)
	if err != nil {
		return "", nil, err
	}
	deps = s.takeUnsynced()
	if err := writeFileRename(name, data, 0o600, false); err != nil {
		s.returnUnsynced(deps)
		return "", nil, fmt.Errorf("snapshot: journal %s: %w", e.ID, err)
	}
	return name, deps, nil
}

// encodeEntry is e's journal file name and content.
func (s *Store) encodeEntry(e Entry) (string, []byte, error) {
	sortChanges(e.Changes)
	if e.Changes == nil {
		e.Changes = []Change{}
	}
	d := diskEntry{ID: e.ID, Time: e.Time, Session: e.Session, Tool: e.Tool, Summary: e.Summary, Kind: e.Kind,
		Reverts: e.Reverts, RollbackTo: e.RollbackTo, Manifest: e.Manifest, Interrupted: e.Interrupted,
		Detached: e.Detached, Began: e.Began, Changes: toDiskChanges(e.Changes)}
	for _, p := range e.Overlapped {
		d.Overlapped = append(d.Overlapped, rawString(p))
	}
	data, err := json.Marshal(d)
	if err != nil {
		return "", nil, fmt.Errorf("snapshot: %w", err)
	}
	name := s.path("journal", e.ID+".json")
	if len(data) > bigEntry {
		// Entries of calls that touched thousands of paths shrink ~10×.
		var b bytes.Buffer
		zw, _ := flate.NewWriter(&b, flate.BestSpeed)
		zw.Write(data)
		zw.Close()
		data, name = b.Bytes(), name+zSuffix
	}
	return name, data, nil
}

// writeEntry writes and renames entry e, its blobs durable first.
func (s *Store) writeEntry(e Entry) error {
	name, data, err := s.encodeEntry(e)
	if err != nil {
		return err
	}
	s.hook("before-sync")
	s.hook("before-commit")
	// The blobs and the entry are flushed together; the rename after both
	// is the commit point.
	if err := writeFileRenameWith(name, data, 0o600, s.syncStore); err != nil {
		return fmt.Errorf("snapshot: journal %s: %w", e.ID, err)
	}
	s.hook("after-commit")
	return nil
}

// bigEntry is the encoded size above which a journal entry is stored
// compressed.
const bigEntry = 32 << 10

// entryExists reports whether entry id is committed.
func (s *Store) entryExists(id string) bool {
	for _, n := range []string{id + ".json", id + ".json" + zSuffix} {
		if _, err := os.Lstat(s.path("journal", n)); err == nil {
			return true
		}
	}
	return false
}

// removeEntry deletes entry id.
func (s *Store) removeEntry(id string) error {
	for _, n := range []string{id + ".json", id + ".json" + zSuffix} {
		if err := os.Remove(s.path("journal", n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

func (s *Store) readEntry(id string) (Entry, error) {
	data, err := os.ReadFile(s.path("journal", id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		var z []byte
		if z, err = os.ReadFile(s.path("journal", id+".json"+zSuffix)); err == nil {
			if data, err = io.ReadAll(flate.NewReader(bytes.NewReader(z))); err != nil {
				return Entry{}, fmt.Errorf("snapshot: journal entry %s: %v: %w", id, err, ErrCorrupt)
			}
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, &NoCallError{ID: id}
	}
	if err != nil {
		return Entry{}, fmt.Errorf("snapshot: %w", err)
	}
	var d diskEntry
	if err := json.Unmarshal(data, &d); err != nil {
		return Entry{}, fmt.Errorf("snapshot: journal entry %s: %v: %w", id, err, ErrCorrupt)
	}
	return Entry{ID: d.ID, Time: d.Time, CallInfo: CallInfo{Session: d.Session, Tool: d.Tool, Summary: d.Summary},
		Kind: d.Kind, Reverts: d.Reverts, RollbackTo: d.RollbackTo, Manifest: d.Manifest, Interrupted: d.Interrupted,
		Detached: d.Detached, Began: d.Began, Overlapped: overlapped(d.Overlapped), Changes: fromDiskChanges(d.Changes)}, nil
}

// List returns up to limit entries (all when limit <= 0), newest first.
func (s *Store) List(ctx context.Context, limit int) ([]Entry, error) {
	ids, err := s.ids("journal")
	if err != nil {
		return nil, err
	}
	slices.Reverse(ids)
	return s.readEntries(ctx, ids, limit)
}

// readEntries reads the entries ids in that order, at most limit of them
// (0: all); entries a concurrent gc removed meanwhile are left out.
func (s *Store) readEntries(ctx context.Context, ids []string, limit int) ([]Entry, error) {
	var out []Entry
	for _, id := range ids {
		if limit > 0 && len(out) >= limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := s.readEntry(id)
		if errors.Is(err, ErrNotFound) {
			continue // removed by a concurrent gc
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Get returns one entry; id may be abbreviated ("42").
func (s *Store) Get(ctx context.Context, id string) (Entry, error) {
	rid, err := resolveID(id)
	if err != nil {
		return Entry{}, err
	}
	return s.readEntry(rid)
}

func overlapped(ps []rawString) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p))
	}
	return out
}
