package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Sentinel errors; check with errors.Is.
var (
	// ErrNotFound: no journal entry (or blob) with that ID.
	ErrNotFound = errors.New("not found")
	// ErrConflict: an undo would overwrite changes made after the call;
	// the error is a *ConflictError listing them.
	ErrConflict = errors.New("conflict")
	// ErrOutside: a path that is not inside the workspace.
	ErrOutside = errors.New("path outside the workspace")
	// ErrCorrupt: the store holds something that does not verify.
	ErrCorrupt = errors.New("snapshot store corrupt")
	// ErrTooLarge: a call's pre-images would store more new content than
	// the per-call cap (WithMaxCallBytes); the call must not run. The
	// error is a *LimitError.
	ErrTooLarge = errors.New("snapshot too large")
	// ErrNoSpace: the filesystem of the store has less free space than
	// the floor (WithMinFreeBytes), or would have once the pre-images are
	// stored; the call must not run. The error is a *LimitError.
	ErrNoSpace = errors.New("not enough free space for snapshots")
)

// Type is the kind of a tree node.
type Type string

// [Node] types. Special files (fifo, socket, device) are recorded, never read.
const (
	TypeFile    Type = "file"
	TypeDir     Type = "dir"
	TypeSymlink Type = "symlink"
	TypeFIFO    Type = "fifo"
	TypeSocket  Type = "socket"
	TypeDevice  Type = "device"
)

// Node is the state of one path: what a manifest records.
type Node struct {
	Type Type `json:"type"`
	// Mode holds the permission bits plus setuid, setgid and sticky
	// (unix numbering, 07777).
	Mode  uint32    `json:"mode"`
	Size  int64     `json:"size,omitempty"`
	MTime time.Time `json:"mtime"`
	// Hash is the hex SHA-256 of a regular file's content; empty for other
	// types, and for a file that could not be read (see Unreadable).
	Hash string `json:"hash,omitempty"`
	// Link is a symlink's target.
	Link string `json:"link,omitempty"`
	// Unreadable marks a regular file whose content could not be read
	// when it was recorded; it can be seen but not restored.
	Unreadable bool `json:"unreadable,omitempty"`
	// Unstored marks a regular file whose content was hashed but not
	// kept, because storing it would have passed the per-call cap or the
	// free-space floor (only after a call ran: before one, the call is
	// refused instead). It compares like any file but cannot be restored.
	Unstored bool `json:"unstored,omitempty"`
	// Owner is the numeric owner; nil in records made before owners were
	// kept (restores then give the path the workspace root's owner).
	Owner *Owner `json:"owner,omitempty"`
}

// Owner is a numeric user and group.
type Owner struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// owners interns Owner values: nearly every path of a tree has the same
// one, so entries share a pointer instead of each holding a copy. The
// values are never modified.
var owners sync.Map // uint64 → *Owner

func ownerOf(uid, gid uint32) *Owner {
	k := uint64(uid)<<32 | uint64(gid)
	if o, ok := owners.Load(k); ok {
		return o.(*Owner)
	}
	o, _ := owners.LoadOrStore(k, &Owner{UID: uid, GID: gid})
	return o.(*Owner)
}

func sameOwner(a, b *Owner) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sameContent reports whether two nodes are the same state for restore
// purposes: type, mode, content and link (not mtime).
func sameContent(a, b *Node) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.Mode == b.Mode && a.Hash == b.Hash && a.Link == b.Link && a.Unreadable == b.Unreadable
}

// Op says what happened to a path.
type Op string

// [Change] operations, exactly the strings of the history contract.
const (
	OpAdded       Op = "added"
	OpModified    Op = "modified"
	OpDeleted     Op = "deleted"
	OpTypeChanged Op = "type_changed"
	OpModeChanged Op = "mode_changed"
)

// Change is one path's difference between two states. Old is nil for an
// added path, New is nil for a deleted one.
type Change struct {
	Path string `json:"path"`
	Op   Op     `json:"op"`
	Old  *Node  `json:"old,omitempty"`
	New  *Node  `json:"new,omitempty"`
}

// classify returns the change between old and new, or false if none.
func classify(path string, old, new *Node) (Change, bool) {
	c := Change{Path: path, Old: old, New: new}
	switch {
	case old == nil && new == nil:
		return c, false
	case old == nil:
		c.Op = OpAdded
	case new == nil:
		c.Op = OpDeleted
	case old.Type != new.Type:
		c.Op = OpTypeChanged
	case old.Hash != new.Hash || old.Link != new.Link || old.Unreadable != new.Unreadable || (old.Type == TypeFile && old.Size != new.Size):
		c.Op = OpModified
	case old.Mode != new.Mode:
		c.Op = OpModeChanged
	default:
		return c, false
	}
	return c, true
}

// Kind says what made a journal entry.
type Kind string

// [Entry] kinds.
const (
	KindCall       Kind = "call"
	KindUndo       Kind = "undo"
	KindRollback   Kind = "rollback"
	KindCheckpoint Kind = "checkpoint"
)

// CallInfo describes who made a change and why.
type CallInfo struct {
	Session string `json:"session"`
	Tool    string `json:"tool"`
	// Summary is a short description of the call's input.
	Summary string `json:"summary"`
}

// Entry is one journaled call with its changeset.
type Entry struct {
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	CallInfo
	Kind Kind `json:"kind"`
	// Reverts is the ID of the entry an undo reverted.
	Reverts string `json:"reverts,omitempty"`
	// RollbackTo is the ID a rollback restored the workspace to (just
	// before it).
	RollbackTo string `json:"rollback_to,omitempty"`
	// Manifest is the blob hash of the whole-tree manifest a checkpoint
	// took.
	Manifest string `json:"manifest,omitempty"`
	// Interrupted marks an entry completed by recovery after the process
	// that began it died.
	Interrupted bool `json:"interrupted,omitempty"`
	// Detached marks the entry of a detached call (a background job, see
	// Detached); Began is when it began (Time is when it was journaled).
	Detached bool      `json:"detached,omitempty"`
	Began    time.Time `json:"began,omitzero"`
	// Overlapped lists paths the command of a whole-workspace call (a
	// shell command or a background job) changed before, or between,
	// entries journaled while it ran that changed them too: those changes
	// are in no entry (see the package documentation, "Attribution").
	Overlapped []string `json:"overlapped,omitempty"`
	// Changes are sorted by path.
	Changes []Change `json:"changes"`
	// Reverted lists the call's changes to protected paths that were
	// reverted before it was journaled (see WithProtection).
	Reverted []Protected `json:"reverted,omitempty"`
	// RevertError says which changes to protected paths could not be
	// reverted (they are in Changes).
	RevertError string `json:"revert_error,omitempty"`
}

// Scope says what a call may change.
type Scope struct {
	// Path is empty for the whole workspace, else a workspace-relative
	// slash path (or an absolute path inside the workspace).
	Path string
	// Staged (a single file only) says the caller makes its change
	// visible only once Call.Durable returned nil, as a sandbox write
	// behind a gate does (sandbox.FileWrite.Gate): Begin then returns
	// before the call's pending record is on the disk, and the caller's
	// own work overlaps that wait. It is ignored (Begin waits, and
	// Call.Staged reports false) when the file's parent directory is
	// missing or the path goes through a symlink (the call is then
	// scoped to the whole workspace).
	Staged bool
}

// Whole is the scope of a shell command: the whole workspace is scanned
// before and after.
func Whole() Scope { return Scope{} }

// File is the scope of a single-file tool: only path's pre-image is taken.
func File(path string) Scope { return Scope{Path: path} }

// Conflict is a path an undo would clobber.
type Conflict struct {
	Path string `json:"path"`
	// Reason is a sentence for a person.
	Reason string `json:"reason"`
	// By is the ID of the later entry that changed the path, or "" when
	// the change was made outside any journaled call.
	By string `json:"by,omitempty"`
}

// ConflictError lists every conflict found; it wraps [ErrConflict].
type ConflictError struct {
	ID        string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "undo %s: %d path(s) changed since:", e.ID, len(e.Conflicts))
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s", quotePath(c.Path), c.Reason)
	}
	b.WriteString("\n(use --force to undo anyway)")
	return b.String()
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// GCPolicy says what journal entries to keep. Zero values mean "no limit".
// The newest entry is always kept, and so is every blob that a kept entry,
// the current manifest or a kept checkpoint references.
type GCPolicy struct {
	// KeepCalls keeps at most this many entries (newest first).
	KeepCalls int
	// MaxAge drops entries older than this.
	MaxAge time.Duration
	// MaxBytes drops the oldest entries until the store is at most this
	// large (best effort: blobs of the current tree always stay).
	MaxBytes int64
}

// GCStats reports what a GC did.
type GCStats struct {
	EntriesRemoved int   `json:"entries_removed"`
	EntriesKept    int   `json:"entries_kept"`
	BlobsRemoved   int   `json:"blobs_removed"`
	BytesFreed     int64 `json:"bytes_freed"`
	BytesKept      int64 `json:"bytes_kept"`
}

func quotePath(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == 0xfffd {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}
