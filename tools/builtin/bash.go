package builtin

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools"
)

// maxBashTimeoutMS is the largest timeout a call may ask for. The schema
// tag and the texts below spell it out; a test holds them to it.
const maxBashTimeoutMS = int(config.MaxTimeout / time.Millisecond)

// BashParams are the parameters of Bash.
type BashParams struct {
	Command         string `json:"command" jsonschema:"The command to execute" agentbox:"command"`
	Timeout         int    `json:"timeout,omitempty" jsonschema:"Optional timeout in milliseconds (max 600000)" minimum:"0" maximum:"600000"`
	Description     string `json:"description,omitempty" jsonschema:"Clear, concise description of what this command does in 5-10 words, in active voice"`
	RunInBackground bool   `json:"run_in_background,omitempty" jsonschema:"Run the command in the background; read its output later with BashOutput"`
}

// Validate implements the pipeline's pure validation.
func (p *BashParams) Validate() error {
	switch {
	case strings.TrimSpace(p.Command) == "":
		return tools.Errorf(tools.ErrValidation, "command is empty")
	case p.Timeout < 0 || p.Timeout > maxBashTimeoutMS:
		return tools.Errorf(tools.ErrValidation, "timeout must be between 0 and %d milliseconds", maxBashTimeoutMS)
	}
	return nil
}

var bashDescription = tools.Description{
	Summary: "Runs a bash command in a throwaway sandbox container that sees only the workspace.",
	Long: `Each command runs in a fresh, hardened container: no network, read-only system, the workspace mounted at its usual path, the host's toolchain read-only. Before it runs the command is parsed and classified (read-only, dangerous or forbidden); anything not provably read-only may need approval. Changes it makes to the workspace are recorded and can be undone.

The working directory persists between calls of a session: a cd in one command applies to the next ones, as long as it stays inside the workspace. Environment variables and shell state do not persist. Output is stdout followed by stderr; very long output keeps its start and end with a note of what was left out. A non-zero exit code is reported with its usual meaning (for grep, 1 only means no match).`,
	Usage: `Quote paths that contain spaces with double quotes.
Prefer the dedicated tools: Glob and Grep to find and search files, Read to read, Edit and Write to change files; use Bash for builds, tests, git and other programs.
Chain dependent commands with && and independent ones as separate calls in one batch.
The default timeout is 2 minutes; pass timeout (milliseconds, at most 600000) for longer commands, or run_in_background for servers and watchers, then read their output with BashOutput and stop them with KillShell.
Describe what the command does in description (5-10 words).`,
	Rules: []string{
		"There is no network in the sandbox: do not try to download packages or reach services.",
		"Do not use interactive commands (editors, pagers, prompts): stdin is closed.",
		"Never bypass the sandbox or try to reach the host, the Docker socket or files outside the workspace.",
	},
	Examples: []string{
		`{"command": "go test ./...", "description": "Run the Go unit tests"}`,
		`{"command": "npm run dev", "run_in_background": true, "description": "Start the dev server"}`,
	},
}

// Bash is the Bash tool.
var Bash = tools.New("Bash", runBash,
	tools.WithKind(tools.KindExecute), tools.WithDescription(bashDescription),
	tools.WithScope(func(p *BashParams) tools.Scope {
		// A background command's changes are captured when it ends.
		return tools.Scope{Kind: tools.ScopeWorkspace, Detached: p.RunInBackground}
	}))

func runBash(ctx context.Context, env *tools.Env, p *BashParams) (tools.Result, error) {
	if env.Sandbox == nil {
		return tools.Result{}, tools.Errorf(tools.ErrInternal, "no sandbox is configured, so commands cannot run; ask the operator to start the engine (agentbox engine start)")
	}
	cwd := env.Workspace
	if env.Session != nil && env.Session.Cwd() != "" {
		cwd = env.Session.Cwd()
	}
	// The sandbox clamps the same way with the same limits; the timeout is
	// settled here only so that a timed-out call can say how long it had.
	timeout := config.ClampTimeout(time.Duration(p.Timeout)*time.Millisecond, env.Limits.DefaultTimeout, env.Limits.MaxTimeout)
	req := tools.ExecRequest{Command: p.Command, Dir: cwd, Timeout: timeout, OnOutput: env.Progress, Call: env.CallID}
	if env.Session != nil {
		req.Session = env.Session.ID
	}
	if p.RunInBackground {
		return startBackground(ctx, env, p, req)
	}
	res, err := env.Sandbox.Exec(ctx, req)
	if err != nil {
		return tools.Result{}, err
	}
	out := formatOutput(res.Stdout, res.Stderr)
	var notes []string
	if res.Dir != "" && res.Dir != cwd && env.Session != nil {
		if err := env.SetCwd(res.Dir); err != nil {
			notes = append(notes, fmt.Sprintf("The command ended in %s, outside the workspace; the working directory stays %s.", res.Dir, cwd))
		} else {
			notes = append(notes, fmt.Sprintf("Working directory is now %s.", res.Dir))
		}
	}
	prog := guessProgram(p.Command)
	if env.Verdict != nil {
		if lp := lastProgram(env.Verdict.Commands); lp != "" {
			prog = lp
		}
	}
	explain, benign := exitExplanation(prog, res.ExitCode, res.TimedOut, res.OOMKilled)
	var b strings.Builder
	b.WriteString(out)
	if out == "" {
		b.WriteString("(no output)")
	}
	if res.ExitCode != 0 || res.TimedOut {
		fmt.Fprintf(&b, "\n\nExit code %d", res.ExitCode)
		if explain != "" {
			b.WriteString(": " + explain)
		}
		b.WriteString(".")
	}
	if res.Network != "" {
		notes = append(notes, res.Network)
	}
	for _, n := range notes {
		b.WriteString("\n" + n)
	}
	r := tools.Result{Content: b.String(), Display: fmt.Sprintf("exit %d", res.ExitCode)}
	if p.Description != "" {
		r.Display = fmt.Sprintf("%s (exit %d)", p.Description, res.ExitCode)
	}
	switch {
	case res.TimedOut:
		r.Err = &tools.ToolError{Kind: tools.ErrTimeout, Message: fmt.Sprintf("The command timed out after %s and was killed.", req.Timeout)}
	case res.ExitCode != 0 && !benign:
		msg := fmt.Sprintf("The command failed with exit code %d", res.ExitCode)
		if explain != "" {
			msg += ": " + explain
		}
		r.Err = &tools.ToolError{Kind: tools.ErrExecution, Message: msg + "."}
	}
	r.SetMeta("exit_code", res.ExitCode)
	r.SetMeta("duration_ms", res.Duration.Milliseconds())
	if res.ContainerID != "" {
		r.SetMeta("container_id", res.ContainerID)
	}
	if env.Session != nil {
		r.SetMeta("cwd", env.Session.Cwd())
	}
	if res.StdoutDropped+res.StderrDropped > 0 {
		r.SetMeta("output_dropped_bytes", res.StdoutDropped+res.StderrDropped)
	}
	return r, nil
}

func startBackground(ctx context.Context, env *tools.Env, p *BashParams, req tools.ExecRequest) (tools.Result, error) {
	if env.Jobs == nil {
		return tools.Fail(tools.ErrValidation, "Background commands are not available here: a one-shot call (such as `agentbox tool`) ends with its process and the command would die with it, so it was not started. Run the command in the foreground (with a timeout of up to 600000 ms), or serve the tools with `agentbox mcp`, whose background shells live as long as the server."), nil
	}
	req.OnOutput = nil
	id, err := env.Jobs.Start(ctx, req)
	if err != nil {
		return tools.Result{}, err
	}
	if env.Session != nil {
		env.Session.AddJob(id)
	}
	journaled := env.AttachJobSnapshot(id)
	r := tools.Result{
		Content: fmt.Sprintf("Command running in the background with ID: %s. Read its output with BashOutput (bash_id %q) and stop it with KillShell (shell_id %q).", id, id, id),
		Display: "background " + id,
	}
	r.SetMeta("bash_id", id)
	if journaled {
		r.Content += " Its changes to the workspace are recorded when it ends or is killed."
	}
	return r, nil
}

// BashOutputParams are the parameters of BashOutput.
type BashOutputParams struct {
	BashID string `json:"bash_id" jsonschema:"The ID of the background shell to read output from"`
	Filter string `json:"filter,omitempty" jsonschema:"Optional regular expression (RE2); only output lines matching it are returned, the others are discarded"`
}

// Validate implements the pipeline's pure validation.
func (p *BashOutputParams) Validate() error {
	if p.BashID == "" {
		return tools.Errorf(tools.ErrValidation, "bash_id is empty")
	}
	if p.Filter != "" {
		if _, err := regexp.Compile(p.Filter); err != nil {
			return tools.Errorf(tools.ErrValidation, "filter is not a valid RE2 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	return nil
}

var bashOutputDescription = tools.Description{
	Summary: "Reads new output of a background command started by Bash with run_in_background.",
	Long:    `Returns the output the command produced since the last BashOutput call for it (stdout, then stderr) and whether it is still running or, if not, its exit code. With filter only matching lines are returned; the rest of that output is discarded.`,
	Usage: `Use the ID Bash returned.
Poll sparingly: each call returns only what is new.`,
	Examples: []string{`{"bash_id": "job-1"}`, `{"bash_id": "job-1", "filter": "ERROR|WARN"}`},
}

// BashOutput is the BashOutput tool.
var BashOutput = tools.New("BashOutput", runBashOutput,
	tools.WithKind(tools.KindRead), tools.ReadOnly(), tools.ConcurrencySafe(),
	tools.WithDescription(bashOutputDescription))

func runBashOutput(ctx context.Context, env *tools.Env, p *BashOutputParams) (tools.Result, error) {
	if env.Jobs == nil || (env.Session != nil && !env.Session.HasJob(p.BashID)) {
		return tools.Fail(tools.ErrNotFound, "No background shell with ID %s in this session.", p.BashID), nil
	}
	st, err := env.Jobs.Read(ctx, p.BashID)
	if err != nil {
		return tools.Result{}, err
	}
	stdout, stderr := st.Stdout, st.Stderr
	if p.Filter != "" {
		re := regexp.MustCompile(p.Filter)
		stdout, stderr = filterLines(stdout, re.MatchString), filterLines(stderr, re.MatchString)
	}
	return withJournal(jobResult(st, formatOutput(stdout, stderr), false), st), nil
}

// withJournal adds the journal entry of a job that ended (Jobs report it
// on the read or kill that saw the end; the pipeline records it as the
// call's journal entry).
func withJournal(r tools.Result, st tools.JobStatus) tools.Result {
	if note := tools.JobJournalNote(st); note != "" {
		r.Content += "\n" + note
	}
	if st.Journal != nil {
		r.SetMeta("journal_id", st.Journal.ID)
		changes := st.Journal.Changes
		if changes == nil {
			changes = []tools.Change{}
		}
		r.SetMeta("changes", changes)
		// Reverted protected paths are told as for a foreground call.
		tools.ReportReverted(&r, *st.Journal)
	}
	if st.JournalError != "" {
		r.SetMeta("journal_error", st.JournalError)
	}
	return r
}

// KillShellParams are the parameters of KillShell.
type KillShellParams struct {
	ShellID string `json:"shell_id" jsonschema:"The ID of the background shell to kill"`
}

var killShellDescription = tools.Description{
	Summary:  "Stops a background command started by Bash with run_in_background.",
	Long:     `Kills the command's container. The changes it made to the workspace up to then are recorded like those of any Bash call, so they can be undone. Its last unread output is returned.`,
	Examples: []string{`{"shell_id": "job-1"}`},
}

// KillShell is the KillShell tool.
var KillShell = tools.New("KillShell", runKillShell,
	tools.WithKind(tools.KindExecute), tools.WithDescription(killShellDescription),
	// The job's own detached snapshot captures its changes; a snapshot
	// around the kill would hold the shell lock the job's needs.
	tools.WithScope(func(*KillShellParams) tools.Scope { return tools.Scope{Kind: tools.ScopeNone} }))

func runKillShell(ctx context.Context, env *tools.Env, p *KillShellParams) (tools.Result, error) {
	if p.ShellID == "" {
		return tools.Fail(tools.ErrValidation, "shell_id is empty"), nil
	}
	if env.Jobs == nil || (env.Session != nil && !env.Session.HasJob(p.ShellID)) {
		return tools.Fail(tools.ErrNotFound, "No background shell with ID %s in this session.", p.ShellID), nil
	}
	st, err := env.Jobs.Kill(ctx, p.ShellID)
	if err != nil {
		return tools.Result{}, err
	}
	if env.Session != nil {
		env.Session.RemoveJob(p.ShellID)
	}
	return withJournal(jobResult(st, formatOutput(st.Stdout, st.Stderr), true), st), nil
}

// jobResult renders a background job's state and output.
func jobResult(st tools.JobStatus, out string, killed bool) tools.Result {
	var b strings.Builder
	switch {
	case killed:
		fmt.Fprintf(&b, "Shell %s was killed.", st.ID)
	case st.Running:
		fmt.Fprintf(&b, "Shell %s is running.", st.ID)
	default:
		fmt.Fprintf(&b, "Shell %s has exited with code %d.", st.ID, st.ExitCode)
	}
	if out == "" {
		b.WriteString("\n(no new output)")
	} else {
		b.WriteString("\n\n" + out)
	}
	r := tools.Result{Content: b.String()}
	switch {
	case killed:
		r.Display = "killed " + st.ID
	case st.Running:
		r.Display = "running"
	default:
		r.Display = fmt.Sprintf("exited %d", st.ExitCode)
	}
	r.SetMeta("running", st.Running && !killed)
	if !st.Running {
		r.SetMeta("exit_code", st.ExitCode)
	}
	return r
}
