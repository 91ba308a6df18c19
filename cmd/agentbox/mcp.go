package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	mcpserver "github.com/agentbox/agentbox/tools/mcp"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/agentbox/agentbox/tools/workspace"
)

func init() { register(newMCPCmd) }

func newMCPCmd(a *app) *cobra.Command {
	var httpAddr, socket string
	cmd := &cobra.Command{
		Use:   "mcp [--http ADDR | --socket PATH]",
		Short: "Serve the tools to an MCP client (stdio, or streamable HTTP with --http or --socket)",
		Long: `mcp serves agentbox's tools to an MCP client: over stdin/stdout by
default (one session), or over streamable HTTP (many sessions):

  --http ADDR    on a TCP address. Every request must carry
                 "Authorization: Bearer <token>": the token in the file that
                 "agentbox mcp token" names (created on first use, mode 0600
                 under the state dir; "agentbox mcp token rotate" replaces
                 it), or mcp.bearer_token / AGENTBOX_MCP_BEARER_TOKEN when set
                 (then only that one). Loopback only, unless mcp.bearer_token
                 is set.
  --socket PATH  on a unix socket in a directory only you can enter (0700,
                 created when missing); the kernel names each peer and only
                 your uid and root are served. No token.

"agentbox setup CLIENT --http URL" writes the token into a client's config.

Every call goes through the full pipeline: rules, the classifier, approval
(MCP elicitation when the client supports it, else mcp.non_interactive),
snapshot, the sandbox, the journal and the audit log. Each MCP session has
its own working directory, read tracker, grants and background jobs.

When no Docker engine answers, agentbox starts its private one first
(engine.auto_start; progress on stderr).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("http") && socket != "" {
				return errors.New("--http and --socket exclude each other")
			}
			if !cmd.Flags().Changed("http") && socket == "" {
				httpAddr = cfg.MCP.HTTPAddr
			}
			log := slog.New(slog.NewTextHandler(a.stderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			// The door opens before anything else starts: a refusal
			// (insecure token file, address in use) comes first.
			var door *mcpDoor
			if httpAddr != "" || socket != "" {
				if door, err = openMCPDoor(cfg, httpAddr, socket, log); err != nil {
					return err
				}
				defer door.listener.Close()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// Before serving: progress goes to stderr, the stdio stream
			// stays clean. Without an engine the host-side tools still work.
			if err := a.ensureEngine(ctx, cfg); err != nil {
				fmt.Fprintf(a.stderr(), "agentbox: warning: %s; shell commands and file writes will fail until an engine answers\n", termtext.Escape(err.Error()))
			}
			return serveMCP(ctx, cfg, log, door)
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8787) instead of stdio, every request with the bearer token (default: mcp.http_addr)")
	cmd.Flags().StringVar(&socket, "socket", "", "serve streamable HTTP on the unix socket PATH instead of stdio; only this uid and root may connect")
	cmd.AddCommand(newMCPTokenCmd(a))
	return cmd
}

func serveMCP(ctx context.Context, cfg *config.Config, log *slog.Logger, door *mcpDoor) error {
	// A configured approval terminal must be one, checked before starting.
	var approvalTTY *mcpserver.TTYChannel
	if cfg.MCP.ApprovalTTY != "" {
		var err error
		if approvalTTY, err = mcpserver.OpenTTYChannel(cfg.MCP.ApprovalTTY); err != nil {
			return err
		}
	}
	// The optional History and Undo tools read and revert the journal of
	// the store every call is journaled in.
	extra := func(t *workspace.Tools) []tools.Tool {
		var out []tools.Tool
		if cfg.MCP.HistoryTool {
			out = append(out, mcpserver.HistoryTool(t.Snapshots()))
		}
		if cfg.MCP.UndoTool {
			out = append(out, mcpserver.UndoTool(t.Snapshots()))
		}
		return out
	}
	sys, err := workspace.Open(ctx, cfg, workspace.Options{Register: builtin.Register, Extra: extra, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sys.Close(cctx)
	}()
	// The pipeline is shared by every session; each call carries its
	// session's approver.
	call := func(ctx context.Context, c mcpserver.Call) tools.Result {
		resp := sys.Pipeline.Run(ctx, tools.Request{Session: c.Session, Tool: c.Tool, Input: c.Input, Progress: c.Progress, Approver: c.Approver})
		r := resp.Result
		if resp.CallID != "" {
			r.SetMeta("call_id", resp.CallID)
		}
		return r
	}
	closeSession := func(ctx context.Context, s *tools.Session) {
		for _, id := range s.Jobs() {
			_ = sys.KillJob(ctx, id)
			s.RemoveJob(id)
		}
	}
	srv, err := mcpserver.NewServer(mcpserver.Options{
		Version:             version,
		Workspace:           cfg.Workspace,
		Tools:               sys.Visible(),
		Call:                call,
		Sessions:            mcpserver.SessionHooks{Close: closeSession},
		Elicit:              cfg.MCP.Elicit,
		AllowNonInteractive: cfg.MCP.NonInteractive == "allow",
		ApprovalTimeout:     cfg.MCP.ApprovalTimeout,
		ApprovalTTY:         approvalTTY,
		ProgressInterval:    cfg.MCP.ProgressInterval,
		MaxInputBytes:       cfg.Tools.MaxInputBytes,
		Instructions: "agentbox runs these tools contained (a throwaway, network-less container that sees only the workspace), " +
			"judged (every shell command is classified; dangerous ones need approval) and reversible (every change is journaled and can be undone).",
		Logger: log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if door == nil {
		return srv.ServeStdio(ctx)
	}
	fmt.Fprintf(os.Stderr, "agentbox: serving MCP on %s (workspace %s; %s)\n", door.url, cfg.Workspace, door.how)
	mux := http.NewServeMux()
	h := srv.HTTPHandler(cfg.MCP.SessionIdleTimeout)
	mux.Handle("/mcp", h)
	mux.Handle("/", h)
	hs := &http.Server{Handler: door.guard(mux), ReadHeaderTimeout: 10 * time.Second, ConnContext: frontdoor.ConnContext}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(door.listener) }()
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
