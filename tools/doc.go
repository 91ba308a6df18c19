// Package tools owns the tool system agents talk to: the [Tool] contract,
// the [Registry], schema generation from Go structs, strict decoding with
// coercion, declaration export (MCP, OpenAI, Anthropic, Gemini), and the
// [Pipeline] that every call goes through.
//
// # Stages
//
// [NewPipeline] chains the stages below, in this order; each is a [Stage]
// (middleware around a [Handler]) in its own file and can be tested alone.
// A call passes them top to bottom on its way in; a stage that works on
// the result does so on the way back, bottom to top. TestDocListsStages
// fails when this list and [NewPipeline] disagree.
//
//   - [AuditStage]: outermost; once the rest returned, whatever happened,
//     appends the call's audit record (a call that cannot be audited
//     fails).
//   - [Recover]: a panic anywhere below becomes an internal error; the
//     stack goes to the log.
//   - [Truncate]: on the way back, caps the result's Content (head and
//     tail kept, the omitted count said; when its cut removes the note of
//     the sandbox's own output cap, its note counts both).
//   - [Lookup]: finds the tool by name or alias.
//   - [DecodeStage]: decodes the input strictly into the tool's params,
//     coercing slips ("10" → 10); bounds the input's size; sets
//     [Call].Command for a tool with a command field.
//   - [Backfill]: makes path fields absolute (~, the session's cwd),
//     refuses paths outside the workspace and sets [Call].Paths. Later
//     stages read these two facts from the call, never from the params.
//   - [ValidateStage]: checks the params against the schema and their own
//     Validate.
//   - [ClassifyStage]: judges the command field and puts the [Verdict] on
//     the call (no classifier or an unknown class: dangerous).
//   - [Rules]: matches the permission rules (deny → ask → allow) against
//     the call's paths and, for a command, the verdict's argv.
//   - [ModeStage]: turns the rule match, verdict, grants and mode into
//     allow, ask or deny; a deny ends the call.
//   - [ProtectStage]: makes a call that changes a protected file ask (in
//     dontAsk mode: refuses it) unless an explicit allow rule matched.
//   - [ApprovalStage]: asks the call's [Approver] about an ask; no answer
//     refuses with needs_approval; "always allow" becomes grants.
//   - [ContainedNote]: on the way back, tells the model that a command run
//     unasked because it was contained did so, and how to undo it.
//   - [RunningCalls.Stage]: only with [Options].Running; registers the call
//     while it runs, so that the egress proxy can ask its approver.
//   - [ReadBeforeWrite]: the existing target of a [TrackWrite] tool must
//     have been read and be unchanged since; afterwards it records reads.
//   - [SnapshotStage]: snapshots the call's [Scope] before it runs (no
//     snapshot, no run) and then ends it with [EndSnapshot]: dropped, or
//     captured and journaled, changes to protected paths reverted unless
//     kept.
//
// Innermost, the pipeline runs the tool: it builds the call's [Env] and
// calls [Tool].Run.
//
// Rules and "always allow" grants cover a shell command part by part (the
// classifier's [Verdict].Parts; an unresolved command only by a whole-tool
// rule). In the default and acceptEdits modes a dangerous command that
// nothing covers runs without asking when it is contained — it runs in
// the sandbox and is journaled (Options.AutoAllowSandboxed, the
// tools.auto_allow_sandboxed key) — and its result and audit record say
// so and how to undo it ([ContainedNote]); deny and ask rules still win.
//
// A refusal at any stage is a [Result] with Err set, written for the
// model; a Go error means agentbox itself failed and becomes an
// [ErrInternal] result. Panics in a tool become [ErrInternal].
//
// # Contract for tool authors (tools/builtin)
//
// Make a tool with [New] from a params struct and a run function:
//
//	type ReadParams struct {
//		FilePath string `json:"file_path" jsonschema:"The absolute path to the file to read" agentbox:"path"`
//		Offset   int    `json:"offset,omitempty" jsonschema:"Line to start from" minimum:"0"`
//		Limit    int    `json:"limit,omitempty" jsonschema:"Number of lines to read" minimum:"1"`
//	}
//	var Read = tools.New("Read", runRead,
//		tools.WithKind(tools.KindRead), tools.ReadOnly(), tools.ConcurrencySafe(),
//		tools.TracksReads(tools.TrackRead), tools.WithDescription(tools.Description{...}))
//
// The schema is generated from the struct (json tags; no omitempty =
// required; `jsonschema` tag = description; `enum`, `minimum`, `maximum`
// tags). Do not write schemas by hand. Defaults are conservative: kind
// other, not read-only, not concurrency-safe, not destructive.
//
// What the pipeline does so that tools do not:
//   - Decoding: unknown fields are rejected by name; "10"→10, "true"→true
//     and similar slips are coerced. Params may implement
//     `Validate() error` (pure, no I/O); return a *[ToolError] or a plain
//     error (which becomes [ErrValidation]).
//   - Paths: fields tagged `agentbox:"path"` arrive absolute and clean: ~
//     expanded, relative paths resolved against the session's cwd, NUL
//     bytes rejected, and the path inside the workspace (or a configured
//     read-only dir for read-only calls). `agentbox:"path,cwd"` fields
//     that are empty arrive as the session's cwd. Do host-side file access
//     through env.Open/env.Lstat/env.RootFor (os.Root), never os.Open.
//   - Permissions, the classifier, modes and approvals. A field tagged
//     `agentbox:"command"` is classified; its verdict is in env.Verdict.
//     Rules named after a tool kind's canonical tool apply to the kind:
//     Edit(...) to every edit/delete/move tool, Read(...) to read/search.
//     A tool that runs programs must have a command field: an execute
//     tool without one (KillShell) is treated as job control and allowed.
//   - Snapshots and the journal: before Run, the pipeline snapshots the
//     call's [Scope] ([Scoper], or [WithScope]; default: nothing for read-only
//     calls, the path fields for edit/delete/move tools, else the whole
//     workspace) and after Run records the changeset; the journal id and
//     changed paths land in [Result].Meta ("journal_id", "changes"). A
//     Scope with Detached set (Bash run_in_background) takes a detached
//     snapshot instead: the tool hands it to its job with
//     env.AttachJobSnapshot, the store is not locked while the job runs,
//     and the job's end journals its changes as one entry: the moment
//     its command exits when the [Jobs] watches it ([JobSnapshots].
//     FinishOnExit), else KillShell, the BashOutput that sees it exit, or
//     shutdown. Jobs.AttachSnapshot is the contract (JobSnapshots
//     implements it), and the entry a Read or Kill reports in
//     [JobStatus].Journal becomes that call's entry. The
//     rule that ends a snapshot (drop it when the call refused before
//     acting, else journal it) is [EndSnapshot], which `agentbox exec`
//     uses too. A tool built [WritesOnlyFiles] ([SandboxWriter]: Write, Edit,
//     MultiEdit) gets its single-file snapshot begun Staged: the store
//     returns before its record is durable and hands a gate
//     ([StagedSnapshot]) that the [Env] puts on every sandbox write
//     ([WriteRequest].Gate) and waits for before any command or job the
//     call starts.
//   - Read-before-write: with TracksReads(TrackWrite), an existing target
//     file must have been read in this session and be unchanged since, or
//     the call fails with [ErrConflict] before Run; after success the new
//     content counts as read. With [TrackRead], a successful call records a
//     [ReadStamp] unless the tool recorded one itself (the Read tool does,
//     to keep Offset/Limit and to answer "unchanged since your last read").
//   - Truncation of Content to env.Limits.MaxOutputBytes (head and tail
//     kept, the omitted count reported) and the audit record.
//
// Result.Meta keys the pipeline reads: "exit_code" (int) and
// "container_id" (string) go into the audit record; the pipeline itself
// adds "journal_id", "changes" and "truncated_bytes".
//
// A tool that fails with validation, not_found, permission_denied,
// needs_approval, forbidden or conflict promises it changed nothing: the
// pipeline then drops the call's snapshot instead of journaling it. Use
// execution, timeout or internal when something may have changed.
//
// What tools do: the work itself. Mutations of the workspace run in the
// sandbox: env.WriteFile for file content, env.Sandbox.Exec for commands,
// env.Jobs for background commands (remember ids with
// env.Session.AddJob). Bash keeps its cwd with env.SetCwd. Return
// tools.Fail(kind, ...) or a *ToolError for failures the model can act on.
//
// Front ends get a ready system from package tools/workspace
// (workspace.Open: registry with the built-ins and discovered tools, the
// pipeline configured from config, sessions and grants under the state dir,
// the audit log, lazily opened sandbox and snapshot store), then call
// [Pipeline.Run] or [Pipeline.RunBatch] with a [Session] (and, when each
// session has its own person to ask, [Request].Approver). Sessions persist
// through [SessionStore] (last save wins across processes).
//
// # The sandbox a tool gets
//
// env.Sandbox and env.Jobs are not the configured [Options].Sandbox and
// Jobs themselves: for each call the pipeline wraps them (in env.go), so
// that a tool cannot do more than its snapshot covers.
//
//   - Read-only: a call with nothing to snapshot (its [Scope] is
//     [ScopeNone]: a read-only tool, or a command the classifier proved
//     read_only) gets a [Sandbox] and Jobs that set [ExecRequest].ReadOnly
//     on every command, so the sandbox mounts the workspace read-only and
//     a wrong read-only judgement fails with EROFS instead of changing an
//     unjournaled file; their WriteFile and [Env.WriteFile] refuse, and
//     [Env].ReadOnly is set.
//   - Gated: a call whose snapshot was begun Staged (a [SandboxWriter]:
//     Write, Edit, MultiEdit) gets a Sandbox whose WriteFile puts the
//     snapshot's gate ([StagedSnapshot]) on the [WriteRequest]: the
//     sandbox stages the content and makes it visible only once the gate
//     opened (the snapshot's record is on the disk), else withdraws it. A
//     command or background job, which cannot be staged, waits for the
//     gate before it starts. A gate that does not open fails the call
//     with timeout (cancelled) or internal, and nothing changed.
//   - Every call's Jobs makes a job's journal entry that a Read or Kill
//     reports ([JobStatus].Journal) the entry of that call.
//
// docs/gated-writes.md follows one gated write through every package it
// crosses, from the Write call to the bytes on the disk.
//
// # The seam to the domain packages
//
// tools imports none of classifier, sandbox and snapshot. It declares what
// it needs as small interfaces ([ClassifyFunc], [Sandbox], [Jobs],
// [Snapshotter], [DetachedSnapshotter]) over its own types ([Verdict],
// [ExecRequest], [ExecResult], [JobStatus], [JournalEntry],
// [SnapshotLimitError], [UndoConflictError]); tools/workspace, the one
// composition root, implements them over the domain packages and is the
// only place that translates between the two.
//
// [Registry], [Session] and [Pipeline] are safe for concurrent use.
package tools
