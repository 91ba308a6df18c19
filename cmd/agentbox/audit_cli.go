package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/workspace"
)

// cliAudit is one command a person ran on the command line (exec, undo,
// rollback, checkpoint) on its way into the audit log, next to the tool
// calls: who ran it is the person at the terminal, so the decision is
// "allow" by "cli".
type cliAudit struct {
	tool    string
	input   map[string]any
	started time.Time
}

func startCLIAudit(tool string, input map[string]any) *cliAudit {
	return &cliAudit{tool: tool, input: input, started: time.Now()}
}

// finish appends the record: the journal entry the command made (its
// id and changed paths; "" when none), its exit code (exec), and its
// error. It returns an error only when the record could not be written.
func (c *cliAudit) finish(ctx context.Context, cfg *config.Config, journalID string, changed []string, exit *int, containerID string, cmdErr error) error {
	in, _ := json.Marshal(c.input)
	now := time.Now()
	r := audit.Record{
		Time:        c.started.UTC(),
		Session:     cliSession,
		CallID:      tools.NewCallID(c.started),
		Tool:        c.tool,
		Input:       audit.MaskInput(in),
		Decision:    "allow",
		DecidedBy:   "cli",
		ContainerID: containerID,
		ExitCode:    exit,
		DurationMS:  now.Sub(c.started).Milliseconds(),
	}
	if journalID != "" {
		r.JournalID, r.Changed = journalID, changed
	}
	if cmdErr != nil {
		r.ErrorKind, r.Error = cliErrorKind(cmdErr), audit.MaskString(cmdErr.Error())
	}
	// The process exits after the command: Close waits for the record's
	// fsync.
	log, err := audit.Open(workspace.AuditPath(cfg))
	if err == nil {
		err = errors.Join(log.Append(context.WithoutCancel(ctx), r), log.Close())
	}
	if err != nil {
		return fmt.Errorf("%s ran, but could not be written to the audit log: %w", c.tool, err)
	}
	return nil
}

// entryPaths are the changed paths of a journal entry made on the
// command line (undo, rollback, checkpoint), for finish.
func entryPaths(e snapshot.Entry) []string {
	var out []string
	for _, ch := range e.Changes {
		out = append(out, ch.Path)
	}
	return out
}

// cliErrorKind maps a command's error to the model-facing error kinds.
func cliErrorKind(err error) string {
	switch {
	case errors.Is(err, snapshot.ErrConflict):
		return string(tools.ErrConflict)
	case errors.Is(err, snapshot.ErrNotFound):
		return string(tools.ErrNotFound)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, sandbox.ErrTimeout):
		return string(tools.ErrTimeout)
	}
	return string(tools.ErrExecution)
}

// auditSubject is what a record's call was about, for the COMMAND column
// of `agentbox audit`: the shell command, else the path, pattern or call
// it named, else its input as JSON; at most max bytes, on one line.
func auditSubject(input json.RawMessage, max int) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return oneLine(string(input), max)
	}
	for _, k := range []string{"command", "file_path", "pattern", "path", "bash_id", "shell_id", "call", "to", "message"} {
		if v, ok := m[k].(string); ok && v != "" {
			if k == "call" || k == "to" {
				v = k + " " + v
			}
			return oneLine(v, max)
		}
	}
	if len(m) == 0 {
		return ""
	}
	return oneLine(string(input), max)
}
