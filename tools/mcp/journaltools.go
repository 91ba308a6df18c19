package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/tools"
)

// Journal is what the optional History and Undo tools use of the
// workspace's journal (workspace.Snapshots, the store every call is
// journaled in). Undo fails with *tools.UndoConflictError,
// tools.ErrNoEntry or tools.ErrNothingToUndo.
type Journal interface {
	List(ctx context.Context, limit int) ([]tools.JournalEntry, error)
	Undo(ctx context.Context, id string, info tools.SnapshotInfo) (tools.JournalEntry, error)
}

// HistoryParams are the History tool's parameters.
type HistoryParams struct {
	Limit       int  `json:"limit,omitempty" jsonschema:"How many recent calls to list (default 20)" minimum:"1" maximum:"200"`
	SessionOnly bool `json:"session_only,omitempty" jsonschema:"List only this session's calls"`
}

// UndoParams are the Undo tool's parameters.
type UndoParams struct {
	CallID string `json:"call_id,omitempty" jsonschema:"The journal id of the call to revert, as History shows it (e.g. 000042 or 42); empty reverts this session's newest call that changed something and has not been undone"`
}

// HistoryTool lists recent journaled calls and the paths they changed, so
// an agent can see what it (or anyone) did. Optional: exposed when
// mcp.history_tool is on.
func HistoryTool(j Journal) tools.Tool {
	return tools.New("History", func(ctx context.Context, env *tools.Env, p *HistoryParams) (tools.Result, error) {
		limit := p.Limit
		if limit <= 0 {
			limit = 20
		}
		fetch := limit
		if p.SessionOnly {
			fetch = 0
		}
		entries, err := j.List(ctx, fetch)
		if err != nil {
			return tools.Result{}, fmt.Errorf("history: %w", err)
		}
		now := time.Now()
		if env.Now != nil {
			now = env.Now()
		}
		undone := map[string]string{}
		for _, e := range entries {
			if e.Kind == tools.EntryUndo && e.Reverts != "" {
				undone[e.Reverts] = e.ID
			}
		}
		var b strings.Builder
		n := 0
		for _, e := range entries {
			if p.SessionOnly && env.Session != nil && e.Session != env.Session.ID {
				continue
			}
			if n == limit {
				break
			}
			n++
			fmt.Fprintf(&b, "%s  %s ago  %s", e.ID, now.Sub(e.Time).Round(time.Second), e.Tool)
			if e.Kind != tools.EntryCall {
				fmt.Fprintf(&b, " (%s", e.Kind)
				if e.Reverts != "" {
					fmt.Fprintf(&b, " of %s", e.Reverts)
				}
				b.WriteString(")")
			}
			if e.Summary != "" {
				fmt.Fprintf(&b, "  %q", e.Summary)
			}
			if by, ok := undone[e.ID]; ok {
				fmt.Fprintf(&b, "  [undone by %s]", by)
			}
			if env.Session != nil && e.Session == env.Session.ID {
				b.WriteString("  [this session]")
			}
			b.WriteString("\n")
			if len(e.Changes) == 0 {
				b.WriteString("    (no changes)\n")
			}
			for i, c := range e.Changes {
				if i == 20 {
					fmt.Fprintf(&b, "    … and %d more\n", len(e.Changes)-i)
					break
				}
				fmt.Fprintf(&b, "    %s %s\n", c.Op, c.Path)
			}
		}
		if n == 0 {
			return tools.Result{Content: "No calls have changed the workspace yet.", Display: "history: empty"}, nil
		}
		return tools.Result{Content: strings.TrimRight(b.String(), "\n"), Display: fmt.Sprintf("history: %d calls", n)}, nil
	},
		tools.WithKind(tools.KindRead), tools.ReadOnly(), tools.ConcurrencySafe(),
		tools.WithDescription(tools.Description{
			Summary: "List recent calls that changed the workspace and the paths each changed (newest first).",
			Long:    "Every mutating call (Write, Edit, MultiEdit, Bash, Undo) is journaled with its exact changeset. Use History to find the journal id of a call you want to revert with Undo.",
			Usage:   "Pass session_only to see only this session's calls.\nThe first column is the journal id Undo takes.",
		}))
}

// UndoTool reverts one journaled call (by default the newest of the
// caller's session: the Journal scopes an empty id to info's session), refusing
// with a conflict when a path was changed again since. Optional: exposed
// when mcp.undo_tool is on. It journals itself (as an undo entry), so it
// takes no snapshot of its own and can itself be undone.
func UndoTool(j Journal) tools.Tool {
	return tools.New("Undo", func(ctx context.Context, env *tools.Env, p *UndoParams) (tools.Result, error) {
		info := tools.SnapshotInfo{Tool: "Undo", Summary: "undo " + p.CallID}
		if p.CallID == "" {
			info.Summary = "undo the last call"
		}
		if env.Session != nil {
			info.Session = env.Session.ID
		}
		e, err := j.Undo(ctx, p.CallID, info)
		var ce *tools.UndoConflictError
		switch {
		case errors.As(err, &ce):
			var b strings.Builder
			fmt.Fprintf(&b, "Cannot undo %s: %d path(s) changed since that call:\n", ce.ID, len(ce.Conflicts))
			for _, c := range ce.Conflicts {
				fmt.Fprintf(&b, "  %s: %s", c.Path, c.Reason)
				if c.By != "" {
					fmt.Fprintf(&b, " (by %s)", c.By)
				}
				b.WriteString("\n")
			}
			b.WriteString("Undo the later calls first (newest first), or fix the files by hand.")
			return tools.Result{Content: b.String(), Display: "undo: conflict", Err: tools.Errorf(tools.ErrConflict, "undo %s conflicts with later changes", ce.ID)}, nil
		case errors.Is(err, tools.ErrNoEntry):
			return tools.Fail(tools.ErrNotFound, "There is no journaled call %q to undo; use History to see the ids.", p.CallID), nil
		case errors.Is(err, tools.ErrNothingToUndo):
			return tools.Fail(tools.ErrValidation, "%s", err.Error()), nil
		case err != nil:
			return tools.Result{}, fmt.Errorf("undo: %w", err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Reverted call %s (journal entry %s):\n", e.Reverts, e.ID)
		for _, c := range e.Changes {
			fmt.Fprintf(&b, "  %s %s\n", c.Op, c.Path)
		}
		b.WriteString("Files it touched have changed: read them again before editing them.")
		res := tools.Result{Content: b.String(), Display: fmt.Sprintf("undid %s", e.Reverts)}
		changes := make([]map[string]string, 0, len(e.Changes))
		for _, c := range e.Changes {
			changes = append(changes, map[string]string{"path": c.Path, "op": c.Op})
			if env.Session != nil {
				env.Session.ForgetRead(env.Workspace + "/" + c.Path)
			}
		}
		res.SetMeta("undo_journal_id", e.ID)
		res.SetMeta("reverted", e.Reverts)
		res.SetMeta("changes", changes)
		return res, nil
	},
		tools.WithKind(tools.KindEdit), tools.Destructive(),
		tools.WithScope(func(*UndoParams) tools.Scope { return tools.Scope{Kind: tools.ScopeNone} }),
		tools.WithDescription(tools.Description{
			Summary: "Revert the changes of one earlier call (by default this session's newest), so you can repair a mistake.",
			Long:    "Undo restores every path the call changed to its state just before the call. If a path was changed again since (by a later call or by the user), nothing is changed and the conflict is reported.",
			Usage:   "Find the id with History.\nUndo of an undo re-applies the original change.",
			Rules:   []string{"Undo only your own mistakes; never undo the user's changes unless asked."},
		}))
}
