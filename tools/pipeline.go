package tools

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/permission"
)

// Handler handles one call at some point of the pipeline and returns its
// result. A Handler never returns a Go error: failures are Results.
type Handler func(ctx context.Context, c *Call) Result

// Stage is middleware: it wraps the rest of the pipeline.
type Stage func(next Handler) Handler

// Chain composes stages around h; the first stage is the outermost.
func Chain(h Handler, stages ...Stage) Handler {
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	return h
}

// Call is one tool call on its way through the pipeline. Stages fill it
// in; later stages and the audit stage read what earlier ones decided.
type Call struct {
	ID      string
	Session *Session
	// Name is the tool name as the caller gave it; Tool is what it
	// resolved to (nil when unknown).
	Name  string
	Tool  Tool
	Input json.RawMessage
	// Params are the decoded, backfilled parameters.
	Params any
	// Command is the params' shell command (the `agentbox:"command"`
	// field; HasCommand says whether the tool has one), set by
	// DecodeStage. Paths are the non-empty path fields as Backfill left
	// them (absolute, inside the boundary), set by Backfill. The later
	// stages read these instead of the params.
	Command    string
	HasCommand bool
	Paths      []string
	// Verdict is the classifier's verdict (tools with a command field).
	Verdict *Verdict
	// Match is the permission rule outcome; Decision the final one.
	Match    permission.Match
	Decision Decision
	// Scope is what the snapshot stage covered; Journal what it recorded.
	Scope   Scope
	Journal *JournalEntry
	// Detached is the open snapshot of a call whose scope is Detached.
	Detached *DetachedSnapshot
	// Progress receives streamed output; may be nil.
	Progress func(Chunk)
	// Approver asks this call's person (Request.Approver); nil: the
	// approver the stages were built with.
	Approver Approver
	Started  time.Time
	// ProtectedApproved lists the protected paths of a file-scoped call
	// that a person or an explicit allow rule approved (ProtectStage):
	// their changes are kept after the call.
	ProtectedApproved []string
	// protectedWrites records what the call's tool wrote to approved
	// protected paths (Env.WriteFile): only that content is kept.
	protectedWrites *writtenSet
	// gate is the Staged snapshot's gate (StagedSnapshot), nil when the
	// snapshot was durable before the tool ran.
	gate func(context.Context) error
}

// Decision is how the permission stages decided.
type Decision struct {
	Action permission.Action `json:"action"`
	// By: "rule", "classifier", "mode", "grant", or the approver's name.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	Rule   string `json:"rule,omitempty"`
}

// JournalEntry is one entry of the snapshot journal as tools see it:
// what the snapshot stage recorded for a call, or an entry a Journal
// lists. tools/workspace translates the store's entries to it.
type JournalEntry struct {
	ID      string   `json:"id"`
	Changes []Change `json:"changes"`
	// Time, Session, Tool, Summary and Kind (EntryCall, EntryUndo, …)
	// say who made the entry, when and how; Reverts is the entry an undo
	// reverted.
	Time    time.Time `json:"time,omitzero"`
	Session string    `json:"session,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Summary string    `json:"summary,omitempty"`
	Kind    string    `json:"kind,omitempty"`
	Reverts string    `json:"reverts,omitempty"`
	// Reverted are the call's changes to protected paths that were
	// reverted before it was journaled; RevertError names those that
	// could not be (they are in Changes).
	Reverted    []ProtectedChange `json:"reverted,omitempty"`
	RevertError string            `json:"revert_error,omitempty"`
}

// ProtectedChange is a change to a protected path, with why it is
// protected.
type ProtectedChange struct {
	Path   string `json:"path"`
	Op     string `json:"op"`
	Reason string `json:"reason"`
	// Hash is the hex SHA-256 of the path's new content when it is a
	// regular file (else empty): the Keep function keeps an approved
	// file tool's change only if it is what the tool wrote.
	Hash string `json:"-"`
}

// Change is one changed path (relative to the workspace).
type Change struct {
	Path string `json:"path"`
	Op   string `json:"op"` // added, modified, deleted, type_changed, mode_changed
}

// Request is one call as a front end hands it over.
type Request struct {
	Session *Session
	Tool    string
	Input   json.RawMessage
	// CallID is optional; the pipeline makes one when empty.
	CallID   string
	Progress func(Chunk)
	// Approver asks the person behind this call (a front end with one
	// person per session, like MCP, passes that session's); nil: the
	// pipeline's Options.Approver.
	Approver Approver
}

// Response is a call's result and its id.
type Response struct {
	CallID string
	Result
}

// Pipeline runs calls. Build it with NewPipeline; safe for concurrent use.
type Pipeline struct {
	reg     *Registry
	opts    Options
	handler Handler
}

// Options configure a Pipeline. Zero values are safe defaults: mode
// default, no rules, deny approver, no sandbox, no snapshots, no audit.
type Options struct {
	Workspace    string
	Root         *os.Root
	ReadOnlyDirs []string
	ReadRoots    map[string]*os.Root
	Home         string

	Rules    permission.Rules
	Mode     permission.Mode
	Classify ClassifyFunc
	Approver Approver
	Grants   GrantStore
	// AutoAllowSandboxed (tools.auto_allow_sandboxed) runs a dangerous
	// command unasked in the default and acceptEdits modes when it is
	// contained: Sandbox and Snapshots are set, the sandbox is available
	// (SandboxChecker) and the call is journaled (a background job only
	// with a DetachedSnapshotter store and Jobs).
	AutoAllowSandboxed bool

	Sandbox   Sandbox
	Jobs      Jobs
	Snapshots Snapshotter
	Audit     AuditLog

	Limits Limits
	// Protection returns the workspace's protection at the moment of a
	// call (config.Closure); nil protects nothing here (the snapshot
	// store still reverts what its own protection covers).
	Protection func() Protection
	// MaxInputBytes bounds a call's JSON input (default 32 MiB).
	MaxInputBytes int
	// Parallelism bounds concurrent calls in a batch (default 10).
	Parallelism int
	Logger      *slog.Logger
	Now         func() time.Time
	// Running, when set, registers each call while it runs, so that
	// the network proxy can ask the call's approver (RunningCalls).
	Running *RunningCalls
}

// ClassifyFunc judges a shell command (an adapter around
// classifier.Classify). It must fail closed: unknown → dangerous.
type ClassifyFunc func(ctx context.Context, cmd string) Verdict

// Snapshotter is the subset of the snapshot store the pipeline uses.
type Snapshotter interface {
	Begin(ctx context.Context, info SnapshotInfo, scope Scope) (SnapshotCall, error)
}

// SnapshotInfo describes the call being journaled.
type SnapshotInfo struct {
	CallID, Session, Tool, Summary string
	// Keep is asked, after the call ran, which of its changes to
	// protected paths to keep; the rest are reverted before the entry is
	// journaled. Nil reverts them all.
	Keep func(ctx context.Context, changes []ProtectedChange) (keep []string)
	// Staged: the tool changes the workspace only through the sandbox's
	// WriteFile (it implements SandboxWriter), which waits for the
	// snapshot's gate (StagedSnapshot) before the change is visible, so
	// the snapshot may return before its record is on the disk.
	Staged bool
}

// StagedSnapshot is implemented by a SnapshotCall begun Staged. Gate
// returns what must succeed before the call's change becomes visible
// (the snapshot's record reaching the disk), nil when nothing need be
// waited for.
type StagedSnapshot interface {
	Gate() func(context.Context) error
}

// SandboxWriter marks tools whose only changes to the workspace are
// Env.WriteFile calls (no command, no background job): their snapshot is
// begun Staged and their writes wait for its gate in the sandbox, the
// content being staged meanwhile.
type SandboxWriter interface {
	WritesOnlyFiles() bool
}

// SnapshotCall is one begun snapshot.
type SnapshotCall interface {
	// Finish captures the changes and writes the journal entry.
	Finish(ctx context.Context) (JournalEntry, error)
	// Abort drops the snapshot without a journal entry.
	Abort(ctx context.Context) error
}

// AuditLog appends audit records.
type AuditLog interface {
	Append(ctx context.Context, r audit.Record) error
}

// GrantStore keeps project-scoped "always allow" grants.
type GrantStore interface {
	List() []Grant
	Add(g Grant) error
}

// NewPipeline builds the standard pipeline over reg.
func NewPipeline(reg *Registry, opts Options) *Pipeline {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Mode == "" {
		opts.Mode = permission.ModeDefault
	}
	if opts.Approver == nil {
		opts.Approver = DenyApprover{}
	}
	if opts.MaxInputBytes <= 0 {
		opts.MaxInputBytes = 32 << 20
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 10
	}
	if opts.Limits.MaxOutputBytes <= 0 {
		opts.Limits.MaxOutputBytes = 30000
	}
	p := &Pipeline{reg: reg, opts: opts}
	pc := permission.Context{Workspace: opts.Workspace, Home: opts.Home, Resolve: p.resolve, ReadDir: p.readDir}
	running := func(next Handler) Handler { return next }
	if opts.Running != nil {
		running = opts.Running.Stage(opts.Approver, opts.Grants)
	}
	p.handler = Chain(p.execute,
		AuditStage(opts.Audit, opts.Now, opts.Logger),
		Recover(opts.Logger),
		Truncate(opts.Limits.MaxOutputBytes),
		Lookup(reg),
		DecodeStage(opts.MaxInputBytes),
		Backfill(PathPolicy{Workspace: opts.Workspace, Home: opts.Home, ReadOnlyDirs: opts.ReadOnlyDirs}),
		ValidateStage(),
		ClassifyStage(opts.Classify),
		Rules(opts.Rules, pc),
		ModeStage(opts.Mode, opts.Rules, pc, opts.Grants, p.containedFunc()),
		ProtectStage(opts.Protection, opts.Workspace, opts.Root, opts.Mode),
		ApprovalStage(opts.Approver, opts.Grants, opts.Rules, pc, opts.Now),
		ContainedNote(func() bool { _, ok := reg.Lookup("Undo"); return ok }),
		running,
		ReadBeforeWrite(p.newEnv),
		SnapshotStage(opts.Snapshots, opts.Approver),
	)
	return p
}

// containedFunc is the ModeStage's ContainedFunc: nil when
// tools.auto_allow_sandboxed is off.
func (p *Pipeline) containedFunc() ContainedFunc {
	if !p.opts.AutoAllowSandboxed {
		return nil
	}
	return p.contained
}

// contained reports whether c, a command, stays inside the boundary if it
// runs: it runs in the sandbox (no network; protected paths read-only or
// reverted after the call unless approved) and its changes to the
// workspace are journaled, so that they can be undone. It fails closed:
// no sandbox or snapshot store, a sandbox that cannot be opened, a call
// that would not be snapshotted as a whole, or a background job whose
// changes could not be journaled when it ends — not contained, and whyNot
// says which.
func (p *Pipeline) contained(ctx context.Context, c *Call) (ok bool, whyNot string) {
	if !c.HasCommand || p.opts.Sandbox == nil {
		return false, "it would not run in the sandbox"
	}
	sc := ScopeOf(c)
	if p.opts.Snapshots == nil || sc.Kind != ScopeWorkspace {
		return false, "its changes would not be journaled for undo"
	}
	if sc.Detached {
		if _, ok := p.opts.Snapshots.(DetachedSnapshotter); !ok || p.opts.Jobs == nil {
			return false, "a background job's changes would not be journaled for undo here"
		}
	}
	if ch, ok := p.opts.Sandbox.(SandboxChecker); ok {
		if err := ch.Available(ctx); err != nil {
			p.opts.Logger.Info("not auto-allowed: the sandbox is unavailable", "call", c.ID, "err", err)
			// A refusal a person must fix (a root-owned workspace) is
			// said as such; anything else is an unavailable sandbox.
			if te := (*ToolError)(nil); errors.As(err, &te) && te.Kind == ErrPermissionDenied {
				return false, te.Message
			}
			return false, "the sandbox is unavailable"
		}
	}
	return true, ""
}

// SandboxChecker is implemented by a Sandbox that can say before a call
// whether commands can run in it (it opens it if need be). The pipeline
// asks it before running a dangerous command unasked: a sandbox that is
// not available contains nothing.
type SandboxChecker interface {
	Available(ctx context.Context) error
}

// Registry is the pipeline's registry.
func (p *Pipeline) Registry() *Registry { return p.reg }

// Run runs one call through every stage.
func (p *Pipeline) Run(ctx context.Context, req Request) Response {
	c := p.newCall(req)
	res := p.handler(ctx, c)
	return Response{CallID: c.ID, Result: res}
}

func (p *Pipeline) newCall(req Request) *Call {
	id := req.CallID
	if id == "" {
		id = NewCallID(p.opts.Now())
	}
	sess := req.Session
	if sess == nil {
		sess = NewSession("default", p.opts.Workspace)
	}
	return &Call{ID: id, Session: sess, Name: req.Tool, Input: req.Input, Progress: req.Progress, Approver: req.Approver, Started: p.opts.Now()}
}

// execute is the innermost handler: it runs the tool.
func (p *Pipeline) execute(ctx context.Context, c *Call) Result {
	if err := ctx.Err(); err != nil {
		return Fail(ErrTimeout, "the call was cancelled before it ran: %v", context.Cause(ctx))
	}
	env := p.newEnv(c)
	res, err := c.Tool.Run(ctx, env, c.Params)
	if err != nil {
		te := AsToolError(err)
		if te.Kind == ErrInternal {
			p.opts.Logger.Error("tool failed", "tool", c.Tool.Name(), "call", c.ID, "err", err)
			if ctx.Err() != nil {
				te = Errorf(ErrTimeout, "the call was cancelled: %v", context.Cause(ctx))
			}
		}
		res.Err = te
		if res.Content == "" {
			res.Content = te.Message
		}
		if res.Display == "" {
			res.Display = string(te.Kind)
		}
	}
	return res
}

func (p *Pipeline) newEnv(c *Call) *Env {
	env := &Env{
		CallID:       c.ID,
		Workspace:    p.opts.Workspace,
		Root:         p.opts.Root,
		ReadOnlyDirs: p.opts.ReadOnlyDirs,
		ReadRoots:    p.opts.ReadRoots,
		Session:      c.Session,
		Sandbox:      p.opts.Sandbox,
		Detached:     c.Detached,
		Verdict:      c.Verdict,
		Limits:       p.opts.Limits,
		Logger:       p.opts.Logger.With("tool", c.Name, "call", c.ID, "session", c.Session.ID),
		Progress:     c.Progress,
		Now:          p.opts.Now,
		Hidden:       p.hidden(c),

		ProtectedApproved: c.ProtectedApproved,
	}
	if len(c.ProtectedApproved) > 0 {
		if c.protectedWrites == nil {
			c.protectedWrites = &writtenSet{}
		}
		env.wrote = c.protectedWrites
	}
	if p.opts.Jobs != nil {
		env.Jobs = callJobs{p.opts.Jobs, c}
	}
	if c.gate != nil {
		// Nothing of the call's may become visible before the gate opens:
		// writes wait for it in the sandbox; anything else waits first.
		if env.Sandbox != nil {
			env.Sandbox = gatedSandbox{env.Sandbox, c.gate}
		}
		if env.Jobs != nil {
			env.Jobs = gatedJobs{env.Jobs, c.gate}
		}
	}
	if c.Tool != nil && ScopeOf(c).Kind == ScopeNone {
		// Nothing is snapshotted for this call, so nothing it runs may
		// write: the sandbox mounts the workspace read-only (EROFS on any
		// write a wrong read-only judgement lets through).
		env.ReadOnly = true
		if env.Sandbox != nil {
			env.Sandbox = readOnlySandbox{env.Sandbox}
		}
		if env.Jobs != nil {
			env.Jobs = readOnlyJobs{env.Jobs}
		}
	}
	return env
}

// resolve is permission.Context.Resolve: path's real location beneath
// the workspace (or its read-only directory), for rule matching. Its
// errors are model-facing sentences.
func (p *Pipeline) resolve(path string) (string, error) {
	real, err := realPath(p.opts.Workspace, p.opts.Root, p.opts.ReadOnlyDirs, p.opts.ReadRoots, path)
	if err != nil {
		var te *ToolError
		if errors.As(err, &te) {
			return "", errors.New(te.Message)
		}
		return "", fmt.Errorf("%s cannot be resolved safely (%v), so no permission rule can be checked against it", path, err)
	}
	return real, nil
}

// maxGlobNames bounds the names readDir lists.
const maxGlobNames = 10000

// readDir is permission.Context.ReadDir: the names in a directory beneath
// the workspace, read through the workspace root (never following a
// symlink out of it). A directory with more than maxGlobNames names is an
// error (the glob is not judged by part of what it expands to: it asks).
func (p *Pipeline) readDir(dir string) ([]string, error) {
	if p.opts.Root == nil {
		return nil, errors.New("no workspace root")
	}
	rel, err := filepath.Rel(p.opts.Workspace, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%s is outside the workspace", dir)
	}
	f, err := p.opts.Root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(maxGlobNames + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(names) > maxGlobNames {
		return nil, fmt.Errorf("%s holds more than %d names", dir, maxGlobNames)
	}
	return names, nil
}

// hidden is Env.Hidden for a call: deny rules with a path specifier that
// apply to the call's tool, and the secret rules (ask rules of Source
// permission.SecretSource): a walk cannot ask about each file it passes,
// so it leaves secret files out, and reading one by name asks.
func (p *Pipeline) hidden(c *Call) func(string) bool {
	if c.Tool == nil {
		return nil
	}
	var deny []permission.Rule
	pc := permission.Call{Tool: c.Tool.Name(), Aliases: c.Tool.Aliases(), Kind: string(c.Tool.Kind())}
	for _, r := range p.opts.Rules.Deny {
		if r.Spec != "" && r.Tool != "Bash" && r.AppliesTo(pc) {
			deny = append(deny, r)
		}
	}
	for _, r := range p.opts.Rules.Ask {
		if r.Source == permission.SecretSource && r.Spec != "" && r.AppliesTo(pc) {
			deny = append(deny, r)
		}
	}
	if len(deny) == 0 {
		return nil
	}
	pctx := permission.Context{Workspace: p.opts.Workspace, Home: p.opts.Home}
	return func(path string) bool {
		for _, r := range deny {
			if r.MatchPath(pctx, path) {
				return true
			}
		}
		return false
	}
}

// RunBatch runs calls as a model's batch: consecutive concurrency-safe
// calls run in parallel (at most Options.Parallelism at once), every
// other call runs alone, and results come back in call order.
func (p *Pipeline) RunBatch(ctx context.Context, reqs []Request) []Response {
	out := make([]Response, len(reqs))
	sem := make(chan struct{}, p.opts.Parallelism)
	for i := 0; i < len(reqs); {
		if !p.concurrencySafe(reqs[i]) {
			out[i] = p.Run(ctx, reqs[i])
			i++
			continue
		}
		j := i
		for j < len(reqs) && p.concurrencySafe(reqs[j]) {
			j++
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(k int) {
				defer wg.Done()
				defer func() { <-sem }()
				out[k] = p.Run(ctx, reqs[k])
			}(k)
		}
		wg.Wait()
		i = j
	}
	return out
}

// concurrencySafe decodes a request's input just to ask the tool; inputs
// that do not decode are safe (they fail at once without side effects).
func (p *Pipeline) concurrencySafe(req Request) bool {
	t, ok := p.reg.Lookup(req.Tool)
	if !ok {
		return true
	}
	params := t.NewParams()
	if len(req.Input) > p.opts.MaxInputBytes || Decode(req.Input, params) != nil {
		return true
	}
	return t.ConcurrencySafe(params)
}

var callIDEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewCallID returns a short, time-sortable, unique call id.
func NewCallID(now time.Time) string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	rand.Read(b[6:])
	return "c" + strings.ToLower(callIDEncoding.EncodeToString(b[:]))
}
