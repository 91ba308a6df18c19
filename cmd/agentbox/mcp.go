package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/classifier"
	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/builtin"
	mcpserver "github.com/agentbox/agentbox/tools/mcp"
	"github.com/agentbox/agentbox/tools/permission"
)

func init() { register(newMCPCmd) }

func newMCPCmd(a *app) *cobra.Command {
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp [--http ADDR]",
		Short: "Serve the tools to an MCP client (stdio, or streamable HTTP with --http)",
		Long: `mcp serves agentbox's tools to an MCP client: over stdin/stdout by
default (one session), or over streamable HTTP with --http (many sessions;
loopback unless a bearer token is configured with mcp.bearer_token or
AGENTBOX_MCP_BEARER_TOKEN; agentbox refuses to listen elsewhere without one).

Every call goes through the full pipeline: rules, the classifier, approval
(MCP elicitation when the client supports it, else mcp.non_interactive),
snapshot, the sandbox, the journal and the audit log. Each MCP session has
its own working directory, read tracker, grants and background jobs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("http") {
				httpAddr = cfg.MCP.HTTPAddr
			}
			if httpAddr != "" {
				if err := mcpserver.CheckListen(httpAddr, cfg.MCP.BearerToken); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(a.stderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return serveMCP(ctx, cfg, log, httpAddr)
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8787) instead of stdio (default: mcp.http_addr)")
	return cmd
}

func serveMCP(ctx context.Context, cfg *config.Config, log *slog.Logger, httpAddr string) error {
	var srv *mcpserver.Server
	// The pipeline is shared by every session; approvals are routed to
	// the session that made the call.
	approver := tools.ApproverFunc(func(ctx context.Context, req tools.ApprovalRequest) (tools.Approval, error) {
		return srv.Approve(ctx, req)
	})
	sys, err := openToolSystem(ctx, cfg, log, approver)
	if err != nil {
		return err
	}
	defer sys.close()
	// The optional tools, off by default.
	var optional []tools.Tool
	if cfg.MCP.HistoryTool {
		optional = append(optional, mcpserver.HistoryTool(sys.store))
	}
	if cfg.MCP.UndoTool {
		optional = append(optional, mcpserver.UndoTool(sys.store))
	}
	for _, t := range optional {
		if err := sys.pipeline.Registry().Register(tools.SourceBuiltin, t); err != nil {
			return err
		}
	}
	ts := sys.pipeline.Registry().List()
	srv, err = mcpserver.NewServer(mcpserver.Options{
		Version:             version,
		Workspace:           cfg.Workspace,
		Tools:               ts,
		Call:                sys.call,
		Sessions:            mcpserver.SessionHooks{Close: sys.closeSession},
		Elicit:              cfg.MCP.Elicit,
		AllowNonInteractive: cfg.MCP.NonInteractive == "allow",
		ApprovalTimeout:     cfg.MCP.ApprovalTimeout,
		ProgressInterval:    cfg.MCP.ProgressInterval,
		Instructions: "agentbox runs these tools contained (a throwaway, network-less container that sees only the workspace), " +
			"judged (every shell command is classified; dangerous ones need approval) and reversible (every change is journaled and can be undone).",
		Logger: log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if httpAddr == "" {
		return srv.ServeStdio(ctx)
	}
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "agentbox: serving MCP on http://%s/mcp (workspace %s)\n", l.Addr(), cfg.Workspace)
	mux := http.NewServeMux()
	h := srv.HTTPHandler(cfg.MCP.BearerToken, cfg.MCP.SessionIdleTimeout)
	mux.Handle("/mcp", h)
	mux.Handle("/", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	}
}

// toolSystem is the tool pipeline with everything behind it: the sandbox
// runner and its background jobs, the snapshot store, the audit log.
type toolSystem struct {
	pipeline *tools.Pipeline
	runner   *docker.Runner
	jobs     *sandbox.JobTable
	store    *snapshot.Store
	root     *os.Root
	roots    map[string]*os.Root
}

func openToolSystem(ctx context.Context, cfg *config.Config, log *slog.Logger, approver tools.Approver) (_ *toolSystem, err error) {
	sys := &toolSystem{roots: map[string]*os.Root{}}
	defer func() {
		if err != nil {
			sys.close()
		}
	}()
	if sys.root, err = os.OpenRoot(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	for _, d := range cfg.Tools.ReadOnlyDirs {
		r, err := os.OpenRoot(d)
		if err != nil {
			return nil, fmt.Errorf("tools.read_only_dirs: %w", err)
		}
		sys.roots[d] = r
	}
	var rules permission.Rules
	if rules.Allow, err = permission.ParseAll(cfg.Tools.Allow, "user"); err != nil {
		return nil, fmt.Errorf("tools.allow: %w", err)
	}
	if rules.Ask, err = permission.ParseAll(cfg.Tools.Ask, "user"); err != nil {
		return nil, fmt.Errorf("tools.ask: %w", err)
	}
	if rules.Deny, err = permission.ParseAll(cfg.Tools.Deny, "user"); err != nil {
		return nil, fmt.Errorf("tools.deny: %w", err)
	}
	mode, err := permission.ParseMode(cfg.Tools.Mode)
	if err != nil {
		return nil, err
	}
	if sys.store, err = snapshot.Open(ctx, cfg.WorkspaceStateDir(), cfg.Workspace, snapshot.WithExclude(cfg.Snapshot.Exclude...)); err != nil {
		return nil, err
	}
	alog, err := audit.Open(filepath.Join(cfg.WorkspaceStateDir(), "audit.jsonl"))
	if err != nil {
		return nil, err
	}
	if sys.runner, err = docker.Open(ctx, cfg, log); err != nil {
		return nil, err
	}
	sys.jobs = sandbox.NewJobs(sys.runner)
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	copts := classifier.FromConfig(cfg.Classifier)
	home, _ := os.UserHomeDir()
	sys.pipeline = tools.NewPipeline(reg, tools.Options{
		Workspace:    cfg.Workspace,
		Root:         sys.root,
		ReadOnlyDirs: cfg.Tools.ReadOnlyDirs,
		ReadRoots:    sys.roots,
		Home:         home,
		Rules:        rules,
		Mode:         mode,
		Classify: func(ctx context.Context, cmd string) tools.Verdict {
			return toolsVerdict(classifier.Classify(cmd, copts))
		},
		Approver:      approver,
		Grants:        tools.NewGrantFile(filepath.Join(cfg.WorkspaceStateDir(), "grants.json")),
		Sandbox:       sandboxAdapter{sys.runner},
		Jobs:          jobsAdapter{sys.jobs},
		Snapshots:     snapshotAdapter{sys.store},
		Audit:         alog,
		Limits:        tools.Limits{MaxOutputBytes: cfg.Tools.MaxOutputBytes, DefaultTimeout: sandbox.DefaultTimeout, MaxTimeout: sandbox.MaxTimeout},
		MaxInputBytes: cfg.Tools.MaxInputBytes,
		Parallelism:   cfg.Tools.Parallelism,
		Logger:        log,
	})
	return sys, nil
}

func (s *toolSystem) call(ctx context.Context, c mcpserver.Call) tools.Result {
	resp := s.pipeline.Run(ctx, tools.Request{Session: c.Session, Tool: c.Tool, Input: c.Input, Progress: c.Progress})
	r := resp.Result
	if resp.CallID != "" {
		r.SetMeta("call_id", resp.CallID)
	}
	return r
}

// closeSession stops the session's background jobs.
func (s *toolSystem) closeSession(ctx context.Context, sess *tools.Session) {
	for _, id := range sess.Jobs() {
		_ = s.jobs.Kill(ctx, id)
		sess.RemoveJob(id)
	}
}

func (s *toolSystem) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.jobs != nil {
		_ = s.jobs.Close(ctx)
	}
	if s.runner != nil {
		_ = s.runner.Close(ctx)
	}
	if s.store != nil {
		_ = s.store.Close()
	}
	for _, r := range s.roots {
		r.Close()
	}
	if s.root != nil {
		s.root.Close()
	}
}

func toolsVerdict(v classifier.Verdict) tools.Verdict {
	out := tools.Verdict{Class: string(v.Class), Commands: v.Commands, Prefix: v.Prefix}
	for _, r := range v.Reasons {
		out.Reasons = append(out.Reasons, tools.Reason{Rule: r.Rule, Text: r.Text, Offset: r.Offset, Message: r.Message})
	}
	return out
}

// sandboxAdapter runs the pipeline's ExecRequests on a sandbox.Runner.
type sandboxAdapter struct{ r sandbox.Runner }

func execSpec(req tools.ExecRequest) sandbox.Spec {
	spec := sandbox.Spec{Argv: req.Argv, Shell: req.Command, Workdir: req.Dir, Env: req.Env, Stdin: req.Stdin,
		Timeout: req.Timeout, OutputCap: req.OutputLimit}
	if f := req.OnOutput; f != nil {
		spec.OnOutput = func(st sandbox.Stream, p []byte) {
			f(tools.Chunk{Stream: st.String(), Data: append([]byte(nil), p...)})
		}
	}
	return spec
}

func execResult(res sandbox.Result) tools.ExecResult {
	return tools.ExecResult{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		StdoutDropped: res.StdoutDropped, StderrDropped: res.StderrDropped, Dir: res.Cwd, TimedOut: res.TimedOut,
		Killed: res.Killed, OOMKilled: res.OOMKilled, Duration: res.Duration, ContainerID: res.ContainerID}
}

func (a sandboxAdapter) Exec(ctx context.Context, req tools.ExecRequest) (tools.ExecResult, error) {
	res, err := a.r.Run(ctx, execSpec(req))
	switch {
	case err == nil, errors.Is(err, sandbox.ErrTimeout):
		// A timeout is a result (TimedOut, exit 137), not a failure.
		return execResult(res), nil
	case errors.Is(err, sandbox.ErrCanceled) && ctx.Err() != nil:
		return execResult(res), ctx.Err()
	case errors.Is(err, sandbox.ErrInvalidSpec):
		return tools.ExecResult{}, tools.Errorf(tools.ErrValidation, "%v", err)
	case errors.Is(err, sandbox.ErrUnsafeWorkspace):
		return tools.ExecResult{}, tools.Errorf(tools.ErrPermissionDenied, "%v", err)
	}
	return tools.ExecResult{}, err
}

// jobsAdapter runs background commands on a sandbox.JobTable.
type jobsAdapter struct{ t *sandbox.JobTable }

func (a jobsAdapter) Start(ctx context.Context, req tools.ExecRequest) (string, error) {
	return a.t.Start(ctx, execSpec(req))
}

func (a jobsAdapter) status(id string) (tools.JobStatus, error) {
	out, err := a.t.Output(id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return tools.JobStatus{}, tools.Errorf(tools.ErrNotFound, "no background shell with ID %s", id)
	}
	if err != nil {
		return tools.JobStatus{}, err
	}
	st := tools.JobStatus{ID: id, Running: !out.Done, Stdout: string(out.Stdout), Stderr: string(out.Stderr)}
	if out.Result != nil {
		st.ExitCode = out.Result.ExitCode
		st.ContainerID = out.Result.ContainerID
		st.Dropped = out.Result.StdoutDropped + out.Result.StderrDropped
	}
	return st, nil
}

func (a jobsAdapter) Read(ctx context.Context, id string) (tools.JobStatus, error) {
	return a.status(id)
}

func (a jobsAdapter) Kill(ctx context.Context, id string) (tools.JobStatus, error) {
	if err := a.t.Kill(ctx, id); err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			return tools.JobStatus{}, tools.Errorf(tools.ErrNotFound, "no background shell with ID %s", id)
		}
		return tools.JobStatus{}, err
	}
	// Wait briefly for the job to report its end.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := a.status(id)
		if err != nil || !st.Running || time.Now().After(deadline) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// snapshotAdapter journals pipeline calls in the snapshot store.
type snapshotAdapter struct{ s *snapshot.Store }

func (a snapshotAdapter) Begin(ctx context.Context, info tools.SnapshotInfo, scope tools.Scope) (tools.SnapshotCall, error) {
	sc := snapshot.Whole()
	if scope.Kind == tools.ScopeFiles && len(scope.Paths) == 1 {
		sc = snapshot.File(scope.Paths[0])
	}
	c, err := a.s.Begin(ctx, snapshot.CallInfo{Session: info.Session, Tool: info.Tool, Summary: info.Summary}, sc)
	if err != nil {
		return nil, err
	}
	return snapshotCall{c}, nil
}

type snapshotCall struct{ c *snapshot.Call }

func (c snapshotCall) Finish(ctx context.Context) (tools.JournalEntry, error) {
	e, err := c.c.Finish(ctx)
	if err != nil {
		return tools.JournalEntry{}, err
	}
	je := tools.JournalEntry{ID: e.ID}
	for _, ch := range e.Changes {
		je.Changes = append(je.Changes, tools.Change{Path: ch.Path, Op: string(ch.Op)})
	}
	return je, nil
}

func (c snapshotCall) Abort(ctx context.Context) error { return c.c.Abort(ctx) }
