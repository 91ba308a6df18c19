// Package workspace assembles the tool system of one workspace from its
// configuration: the registry (built-in tools plus discovered ones), the
// pipeline with its permission rules, mode, classifier and approver, the
// CLI sessions and project grants under the state dir, the audit log, the
// snapshot store and the sandbox. The sandbox and the snapshot store open
// lazily, on the first call that needs them, so read-only calls stay
// cheap. A *Tools is safe for concurrent use.
//
// It is the one composition root: the only package that imports both
// tools and the domain packages (classifier, sandbox, snapshot). adapt.go
// implements the interfaces tools declares (ClassifyFunc, Sandbox, Jobs,
// Snapshotter) over them and translates their types and errors to the
// tools' own (Verdict, ExecRequest/ExecResult, JobStatus, JournalEntry,
// SnapshotLimitError, UndoConflictError); no other package translates.
// It also feeds the sandbox the snapshot watcher's entry changes
// (Snapshots.entryChanges, sandbox.WithEntryChanges), so the unix sockets
// the sandbox masks are kept current without a walk of the tree.
// A process has one snapshot store per workspace, Snapshots: the
// pipeline journals every call in it, the MCP History and Undo tools read
// and revert it, and `agentbox exec` journals its command in it.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentbox/agentbox/classifier"
	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/permission"
)

// Options configure Open.
type Options struct {
	// Register adds the built-in tools (builtin.Register); tools cannot
	// import its own sub-package.
	Register func(*tools.Registry) error
	// Extra returns tools built over this workspace's own parts (the MCP
	// History and Undo tools over t.Snapshots()), registered after
	// Register's and before discovered ones. May be nil.
	Extra func(t *Tools) []tools.Tool
	// Approver asks a person; nil means non-interactive (deny).
	Approver tools.Approver
	Logger   *slog.Logger
	// Runner replaces the Docker runner (tests, other backends). When nil
	// the Docker runner is opened on the first command.
	Runner sandbox.Runner
	// OneShot is set by a process that runs one call and exits (`agentbox
	// tool`): background commands are refused, since they would die with
	// the process while the model was told to read them later.
	OneShot bool
}

// Tools is the whole tool system of one workspace, wired from config:
// registry, pipeline, sessions, grants, audit log, snapshots and sandbox.
type Tools struct {
	Config   *config.Config
	Registry *tools.Registry
	Pipeline *tools.Pipeline
	Sessions *tools.SessionStore
	Grants   *tools.GrantFile
	Audit    *audit.Log
	// Rules and Mode are the permission settings in force.
	Rules permission.Rules
	Mode  permission.Mode

	root      *os.Root
	readRoots map[string]*os.Root
	sandbox   *lazySandbox
	jobs      *lazyJobs
	snaps     *Snapshots
}

// Paths under the workspace's state dir.
const (
	sessionsDir = "sessions"
	grantsFile  = "grants.json"
	auditFile   = "audit.jsonl"
)

// AuditPath is the audit log of a workspace.
func AuditPath(cfg *config.Config) string {
	return filepath.Join(cfg.WorkspaceStateDir(), auditFile)
}

// GrantsPath is the file of a workspace's project grants.
func GrantsPath(cfg *config.Config) string {
	return filepath.Join(cfg.WorkspaceStateDir(), grantsFile)
}

// SessionsDir is where a workspace's CLI sessions are kept.
func SessionsDir(cfg *config.Config) string {
	return filepath.Join(cfg.WorkspaceStateDir(), sessionsDir)
}

// Open wires the tool system for cfg's workspace. Nothing heavy starts
// here: the sandbox and the snapshot store open on first use.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*Tools, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	mode, err := permission.ParseMode(cfg.Tools.Mode)
	if err != nil {
		return nil, err
	}
	var rules permission.Rules
	for _, x := range []struct {
		dst *[]permission.Rule
		src []string
	}{{&rules.Deny, cfg.Tools.Deny}, {&rules.Ask, cfg.Tools.Ask}, {&rules.Allow, cfg.Tools.Allow}} {
		for _, s := range x.src {
			r, err := permission.Parse(s)
			if err != nil {
				return nil, err
			}
			r.Source = "config" // a project config can add deny and ask rules only
			*x.dst = append(*x.dst, r)
		}
	}
	secrets, err := SecretRules(cfg.Tools.Secrets)
	if err != nil {
		return nil, err
	}
	rules.Ask = append(rules.Ask, secrets...)
	s := &Tools{Config: cfg, readRoots: map[string]*os.Root{}, Rules: rules, Mode: mode}
	ok := false
	defer func() {
		if !ok {
			s.Close(context.WithoutCancel(ctx))
		}
	}()
	if s.root, err = os.OpenRoot(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var roDirs []string
	for _, d := range cfg.Tools.ReadOnlyDirs {
		real, err := config.RealDir(d)
		if err != nil {
			return nil, fmt.Errorf("tools.read_only_dirs %s: %w", d, err)
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			return nil, fmt.Errorf("tools.read_only_dirs %s: %w", d, err)
		}
		if config.Within(cfg.StateDir, real) || config.Within(real, cfg.StateDir) {
			r.Close()
			return nil, fmt.Errorf("tools.read_only_dirs %s: overlaps the state dir %s, which agents must never read", d, cfg.StateDir)
		}
		roDirs = append(roDirs, real)
		s.readRoots[real] = r
	}
	state := cfg.WorkspaceStateDir()
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if s.Audit, err = audit.Open(filepath.Join(state, auditFile), audit.WithLogger(log)); err != nil {
		return nil, err
	}
	s.Sessions = tools.NewSessionStore(SessionsDir(cfg), cfg.Workspace)
	s.Grants = tools.NewGrantFile(GrantsPath(cfg))
	running := tools.NewRunningCalls()
	s.snaps = NewSnapshots(cfg, log)
	s.sandbox = &lazySandbox{cfg: cfg, log: log, runner: opts.Runner, net: newNetTracker(s.Audit, running), entries: s.snaps.entryChanges}
	s.jobs = &lazyJobs{sb: s.sandbox}
	s.jobs.snaps.Logger = log
	s.Registry = tools.NewRegistry()
	if opts.Register != nil {
		if err := opts.Register(s.Registry); err != nil {
			return nil, fmt.Errorf("registering built-in tools: %w", err)
		}
	}
	if opts.Extra != nil {
		for _, t := range opts.Extra(s) {
			if err := s.Registry.Register(tools.SourceBuiltin, t); err != nil {
				return nil, fmt.Errorf("registering %s: %w", t.Name(), err)
			}
		}
	}
	if wf, err := s.sandbox.net.webFetch(cfg); err != nil {
		return nil, err
	} else if wf != nil {
		if err := s.Registry.Register(tools.SourceBuiltin, wf); err != nil {
			return nil, fmt.Errorf("registering WebFetch: %w", err)
		}
	}
	if len(cfg.Tools.Discovery) > 0 {
		found, err := tools.Discover(ctx, s.sandbox, cfg.Tools.Discovery, cfg.Workspace)
		if err != nil {
			return nil, err
		}
		for _, t := range found {
			if err := s.Registry.Register(tools.SourceDiscovered, t); err != nil {
				return nil, fmt.Errorf("discovered tool: %w", err)
			}
		}
	}
	home, _ := os.UserHomeDir()
	approver := opts.Approver
	if approver == nil {
		approver = tools.DenyApprover{}
	}
	s.Pipeline = tools.NewPipeline(s.Registry, tools.Options{
		Workspace:    cfg.Workspace,
		Root:         s.root,
		ReadOnlyDirs: roDirs,
		ReadRoots:    s.readRoots,
		Home:         home,
		Rules:        rules,
		Mode:         mode,
		Classify:     classifierFunc(classifier.FromConfig(cfg.Classifier), classifier.WithSecrets(cfg.Tools.Secrets...)),
		Approver:     approver,
		Grants:       s.Grants,
		// Contained: the sandbox and the snapshot store are always wired
		// here; the sandbox says at the call whether it is available.
		AutoAllowSandboxed: cfg.Tools.AutoAllowSandboxed,
		Sandbox:            s.sandbox,
		Jobs:               s.jobsFor(opts.OneShot),
		Snapshots:          s.snaps,
		Audit:              s.Audit,
		Limits: tools.Limits{
			MaxOutputBytes: cfg.Tools.MaxOutputBytes,
			DefaultTimeout: cfg.Sandbox.DefaultTimeout,
			MaxTimeout:     cfg.Sandbox.MaxTimeout,
		},
		Protection:    func() tools.Protection { return s.snaps.Closure() },
		MaxInputBytes: cfg.Tools.MaxInputBytes,
		Parallelism:   cfg.Tools.Parallelism,
		Logger:        log,
		Running:       running,
	})
	ok = true
	return s, nil
}

// SecretSource is the Source of the ask rules made from tools.secrets.
const SecretSource = permission.SecretSource

// SecretRules turns tools.secrets into the ask rules `Read(entry)` they
// stand for (Source SecretSource): the one mechanism that guards secret
// files for every tool, Bash included (see config.DefaultSecretPaths).
func SecretRules(specs []string) ([]permission.Rule, error) {
	out := make([]permission.Rule, 0, len(specs))
	for _, s := range specs {
		r, err := permission.Parse("Read(" + s + ")")
		if err != nil {
			return nil, fmt.Errorf("tools.secrets: %w", err)
		}
		r.Source = SecretSource
		out = append(out, r)
	}
	return out, nil
}

// Visible lists the tools an agent should be offered: those no deny rule
// refuses entirely and, in plan mode, only those that can be read-only.
func (s *Tools) Visible() []tools.Tool {
	return s.Registry.Filter(func(t tools.Tool) bool {
		if !tools.NotDenied(s.Rules)(t) {
			return false
		}
		return s.Mode != permission.ModePlan || tools.PlanMode(t)
	})
}

// Close stops background jobs, the sandbox and the snapshot store, and
// closes the audit log last: its records are on disk when Close returns.
func (s *Tools) Close(ctx context.Context) error {
	var errs []error
	if s.jobs != nil {
		errs = append(errs, s.jobs.close(ctx))
	}
	if s.sandbox != nil {
		errs = append(errs, s.sandbox.close(ctx))
	}
	if s.snaps != nil {
		errs = append(errs, s.snaps.Close())
	}
	if s.Audit != nil {
		errs = append(errs, s.Audit.Close())
	}
	if s.root != nil {
		s.root.Close()
	}
	for _, r := range s.readRoots {
		r.Close()
	}
	return errors.Join(errs...)
}

// lazySandbox opens the Docker runner on the first command.
type lazySandbox struct {
	cfg    *config.Config
	log    *slog.Logger
	net    *netTracker // the egress proxy's connections (network.go)
	mu     sync.Mutex
	runner sandbox.Runner
	err    error
	owned  bool
	// entries feeds the sandbox the workspace's entry changes from the
	// snapshot store's watcher (Snapshots.entryChanges).
	entries func() (map[string]bool, bool)
}

func (l *lazySandbox) get(ctx context.Context) (sandbox.Runner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runner != nil || l.err != nil {
		return l.runner, l.err
	}
	r, err := sandbox.Open(ctx, l.cfg, l.log, sandbox.WithNetwork(l.net.hooks()), sandbox.WithEntryChanges(l.entries))
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // do not remember a cancelled open
		}
		if errors.Is(err, sandbox.ErrUnsafeWorkspace) {
			// Not remembered: once the person fixes it (chown), the next
			// call works without a restart.
			l.log.Error("sandbox refused the workspace", "err", err)
			return nil, err
		}
		l.err = err
		if !errors.Is(err, sandbox.ErrUnavailable) {
			l.err = fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
		l.log.Error("sandbox unavailable", "err", err)
		return nil, l.err
	}
	l.runner, l.owned = r, true
	return r, nil
}

// Available implements tools.SandboxChecker: it opens the runner if it
// is not open yet.
func (l *lazySandbox) Available(ctx context.Context) error {
	_, err := l.get(ctx)
	if errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		// Why, for the question (or refusal) the call gets instead.
		return tools.Errorf(tools.ErrPermissionDenied, "%s", unsafeReason(err))
	}
	return err
}

func (l *lazySandbox) Exec(ctx context.Context, req tools.ExecRequest) (tools.ExecResult, error) {
	r, err := l.get(ctx)
	if err != nil {
		return tools.ExecResult{}, sandboxError(err)
	}
	res, err := sandboxRunner{Runner: r}.Exec(ctx, req)
	res.Network = l.net.take(req.Call)
	return res, err
}

func (l *lazySandbox) close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runner != nil && l.owned {
		return l.runner.Close(ctx)
	}
	return nil
}

// jobsFor is the Jobs the pipeline gets: none (a nil interface) for a
// one-shot process.
func (s *Tools) jobsFor(oneShot bool) tools.Jobs {
	if oneShot {
		return nil
	}
	return s.jobs
}

// lazyJobs runs background jobs on the lazily opened runner. A job's
// attached snapshot is finished (its changes journaled, protected ones
// reverted) the moment its command exits; the Kill or the Read that sees
// it ended reports the entry; close finishes what is left.
type lazyJobs struct {
	sb    *lazySandbox
	mu    sync.Mutex
	table *sandbox.JobTable
	snaps tools.JobSnapshots
}

// AttachSnapshot implements tools.Jobs: job id's end journals snap.
func (l *lazyJobs) AttachSnapshot(id string, snap tools.SnapshotCall) bool {
	if !l.snaps.AttachSnapshot(id, snap) {
		return false
	}
	l.mu.Lock()
	t := l.table
	l.mu.Unlock()
	if t != nil {
		if exited := t.Done(id); exited != nil {
			l.snaps.FinishOnExit(context.Background(), id, exited)
		}
	}
	return true
}

func (l *lazyJobs) get(ctx context.Context) (sandboxJobs, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.table == nil {
		r, err := l.sb.get(ctx)
		if err != nil {
			return sandboxJobs{}, sandboxError(err)
		}
		l.table = sandbox.NewJobs(r)
	}
	return sandboxJobs{Jobs: l.table}, nil
}

func (l *lazyJobs) Start(ctx context.Context, req tools.ExecRequest) (string, error) {
	j, err := l.get(ctx)
	if err != nil {
		return "", err
	}
	return j.Start(ctx, req)
}

func (l *lazyJobs) Read(ctx context.Context, id string) (tools.JobStatus, error) {
	j, err := l.get(ctx)
	if err != nil {
		return tools.JobStatus{}, err
	}
	st, err := j.Read(ctx, id)
	if err == nil && !st.Running {
		l.snaps.FinishJob(ctx, id, &st)
	}
	return st, err
}

func (l *lazyJobs) Kill(ctx context.Context, id string) (tools.JobStatus, error) {
	j, err := l.get(ctx)
	if err != nil {
		return tools.JobStatus{}, err
	}
	st, err := j.Kill(ctx, id)
	if err == nil {
		l.snaps.FinishJob(ctx, id, &st)
	}
	return st, err
}

func (l *lazyJobs) close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.table != nil {
		err = l.table.Close(ctx)
	}
	// The jobs are dead (or ctx is done): journal what they changed.
	l.snaps.FinishAll(ctx)
	return err
}
