package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/spf13/cobra"
)

func init() { register(newHistoryCmd) }

// openSnapshots opens the snapshot store of the configured workspace.
func openSnapshots(ctx context.Context, a *app) (*snapshot.Store, error) {
	_, st, err := openConfigSnapshots(ctx, a)
	return st, err
}

// openConfigSnapshots is openSnapshots for commands that need the
// configuration too.
func openConfigSnapshots(ctx context.Context, a *app) (*config.Config, *snapshot.Store, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, nil, err
	}
	st, err := snapshot.OpenConfig(ctx, cfg)
	return cfg, st, err
}

// cliCall is who the snapshot commands journal their own entries as.
var cliCall = snapshot.CallInfo{Session: "cli"}

// historyChange and historyEntry are the `history --json` contract.
type historyChange struct {
	Path string      `json:"path"`
	Op   snapshot.Op `json:"op"`
}

type historyEntry struct {
	ID      string          `json:"id"`
	Time    time.Time       `json:"time"`
	Session string          `json:"session"`
	Tool    string          `json:"tool"`
	Summary string          `json:"summary"`
	Changes []historyChange `json:"changes"`
	// Overlapped: paths a shell command changed before (or between) calls
	// journaled while it ran that changed them too (see snapshot.Entry).
	Overlapped []string `json:"overlapped,omitempty"`
	// UndoneBy is the undo entry that reverted this call, if any.
	UndoneBy string `json:"undone_by,omitempty"`
}

func toHistory(e snapshot.Entry) historyEntry {
	h := historyEntry{ID: e.ID, Time: e.Time, Session: e.Session, Tool: e.Tool, Summary: e.Summary, Changes: []historyChange{}, Overlapped: e.Overlapped}
	for _, c := range e.Changes {
		h.Changes = append(h.Changes, historyChange{Path: c.Path, Op: c.Op})
	}
	return h
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(jsonWriter{w})
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonWriter passes each JSON document written to it through
// termtext.JSON, so that JSON printed on a terminal carries no raw control
// or bidi character (the values decode the same). json.Encoder writes a
// document with a single Write.
type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(termtext.JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

var opLetters = map[snapshot.Op]string{
	snapshot.OpAdded: "A", snapshot.OpModified: "M", snapshot.OpDeleted: "D",
	snapshot.OpTypeChanged: "T", snapshot.OpModeChanged: "X",
}

// printEntry writes one entry for a person; with stat, its changes are
// counted and grouped by directory.
func printEntry(w io.Writer, e snapshot.Entry, undoneBy string, stat bool) {
	// Summaries and paths come from the agent: cut, then escape, so that
	// nothing in them reaches the terminal raw.
	summary := strings.ReplaceAll(e.Summary, "\n", " ")
	if len(summary) > 72 {
		cut := 69
		for cut > 0 && !utf8.RuneStart(summary[cut]) {
			cut--
		}
		summary = summary[:cut] + "..."
	}
	summary = termtext.Line(summary)
	extra := ""
	switch {
	case e.Reverts != "":
		extra = " [undoes " + e.Reverts + "]"
	case e.RollbackTo != "":
		extra = " [rollback to before " + e.RollbackTo + "]"
	case e.Kind == snapshot.KindCheckpoint:
		extra = " [checkpoint]"
	}
	if e.Interrupted {
		extra += " [interrupted]"
	}
	if undoneBy != "" {
		extra += " [undone by " + undoneBy + "]"
	}
	sess := e.Session
	if sess == "" {
		sess = "-"
	}
	fmt.Fprintf(w, "%s  %s  %-10s %s  %s%s\n", termtext.Line(e.ID), e.Time.Local().Format("2006-01-02 15:04:05"), termtext.Line(e.Tool), termtext.Line(sess), summary, termtext.Line(extra))
	printChanges(w, e.Changes, stat)
}

func newHistoryCmd(a *app) *cobra.Command {
	var limit int
	var stat bool
	cmd := &cobra.Command{
		Use:   "history [--stat] [--limit N]",
		Short: "List journaled calls, newest first, with the paths each changed",
		Long: `List journaled calls, newest first, with the paths each changed. A call
that changed more than 20 paths is shown grouped by directory with counts
(` + "`agentbox diff CALL`" + ` shows every path); --stat counts every call's
changes by kind and groups them into at most 8 lines. --json prints every
path.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openSnapshots(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer st.Close()
			entries, err := st.List(cmd.Context(), limit)
			if err != nil {
				return err
			}
			undone := undoneBy(entries)
			if a.jsonOut {
				out := make([]historyEntry, 0, len(entries))
				for _, e := range entries {
					h := toHistory(e)
					h.UndoneBy = undone[e.ID]
					out = append(out, h)
				}
				return writeJSON(a.stdout(), out)
			}
			if len(entries) == 0 {
				fmt.Fprintln(a.stdout(), "no calls journaled yet")
			}
			for _, e := range entries {
				printEntry(a.stdout(), e, undone[e.ID], stat)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most N calls (0: all)")
	cmd.Flags().BoolVar(&stat, "stat", false, "count each call's changes and group them by directory")
	return cmd
}

// undoneBy maps each entry reverted by an undo among entries (newest
// first, so an undo comes before what it reverted) to that undo's id; an
// undo that was itself undone no longer counts.
func undoneBy(entries []snapshot.Entry) map[string]string {
	by := map[string]string{}
	for _, e := range entries {
		if e.Kind == snapshot.KindUndo && e.Reverts != "" && by[e.ID] == "" {
			by[e.Reverts] = e.ID
		}
	}
	return by
}

// entryLabel is an entry's tool and summary for a person, without saying
// the tool twice (summaries of calls start with the tool's name).
func entryLabel(e snapshot.Entry) string {
	s := oneLine(e.Summary, 60)
	if e.Tool == "" || strings.HasPrefix(e.Summary, e.Tool) {
		return s
	}
	return e.Tool + ": " + s
}

// reportConflict prints an undo conflict and returns the exit status.
func reportConflict(a *app, err error) error {
	var ce *snapshot.ConflictError
	if !errors.As(err, &ce) {
		return err
	}
	if a.jsonOut {
		writeJSON(a.stdout(), map[string]any{"ok": false, "error": map[string]string{"kind": "conflict", "message": "paths changed since the call; use --force to undo anyway"}, "conflicts": ce.Conflicts})
	}
	fmt.Fprintln(a.stderr(), "agentbox:", termtext.Escape(ce.Error()))
	return exitCode(1)
}
