package tools

import (
	"errors"
	"fmt"
)

// Kinds of journal entry ([JournalEntry].Kind).
const (
	EntryCall       = "call"
	EntryUndo       = "undo"
	EntryRollback   = "rollback"
	EntryCheckpoint = "checkpoint"
)

// Errors of undoing a journal entry (the MCP Undo tool); tools/workspace
// translates the store's to them.
var (
	// ErrNoEntry: no journal entry has that id, or none is left to undo.
	ErrNoEntry = errors.New("no such journal entry")
	// ErrNothingToUndo: the entry changed nothing.
	ErrNothingToUndo = errors.New("nothing to undo")
)

// UndoConflictError is an undo refused because paths the entry changed
// were changed again since (by a later call or by a person).
type UndoConflictError struct {
	ID        string
	Conflicts []UndoConflict
	// Cause is the store's own error, for logs.
	Cause error
}

// UndoConflict is one path changed since the entry being undone.
type UndoConflict struct {
	Path, Reason string
	// By is the entry that changed it since, if known.
	By string
}

func (e *UndoConflictError) Error() string {
	if e.Cause != nil {
		return e.Cause.Error()
	}
	return fmt.Sprintf("undo %s: %d path(s) changed since", e.ID, len(e.Conflicts))
}
