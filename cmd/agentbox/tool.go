package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/agentbox/agentbox/tools/workspace"
	"github.com/spf13/cobra"
)

func init() { register(newToolCmd) }

// toolJSON is the `agentbox tool --json` contract.
type toolJSON struct {
	OK      bool             `json:"ok"`
	Content string           `json:"content"`
	Display string           `json:"display"`
	Error   *tools.ToolError `json:"error"`
	CallID  string           `json:"call_id"`
	Meta    map[string]any   `json:"meta"`
}

// cliSession is the session CLI calls share unless --session names one.
const cliSession = "cli"

func newToolCmd(a *app) *cobra.Command {
	var session string
	var yes bool
	cmd := &cobra.Command{
		Use:   "tool NAME ['JSON-ARGS' | -]",
		Short: "Run one tool call through the whole pipeline",
		Long: `Run one tool call (Read, Write, Edit, Bash, ...) through agentbox's whole
pipeline: decoding, path checks, permission rules, the classifier, the mode,
approval, snapshot, the sandbox, change capture, truncation and audit.

The input is a JSON object ('-' reads it from stdin; none means {}). Calls from
the CLI share one session per workspace (its cwd, what it has read, its
grants), so "agentbox tool Read" then "agentbox tool Edit" works from a script;
--session names another. Background shells (Bash run_in_background) are
refused: they would die with this process. Use the MCP server for those.

A call that needs approval is asked on the terminal when stdin and stderr
are one (tools.approver: auto); --yes approves this one call instead (allow
once, no grant). Without either it is refused, and the refusal says which
rule, grant or mode would allow it. An engine is started when none answers
(engine.auto_start).

Exit status: 0 when the call succeeded, 1 when it failed (the error's kind and
message go to stderr, or into the JSON with --json).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			input := []byte("{}")
			if len(args) == 2 {
				input = []byte(args[1])
				if args[1] == "-" {
					if input, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), int64(cfg.Tools.MaxInputBytes)+1)); err != nil {
						return fmt.Errorf("reading the input: %w", err)
					}
				}
			}
			if session == "" {
				session = cliSession
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := a.ensureEngine(ctx, cfg); err != nil {
				// Host-side calls (Read, Grep, ...) work without one.
				fmt.Fprintf(a.stderr(), "agentbox: warning: %s\n", termtext.Escape(err.Error()))
			}
			sys, err := openCLISystem(ctx, a, cfg, yes)
			if err != nil {
				return err
			}
			defer sys.Close(context.WithoutCancel(ctx))
			sess, err := sys.Sessions.Load(session)
			if err != nil {
				return err
			}
			resp := sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: args[0], Input: input})
			if err := sys.Sessions.Save(sess); err != nil {
				fmt.Fprintf(a.stderr(), "agentbox: warning: session state not saved: %v\n", err)
			}
			return printToolResult(a, resp)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session id (default: the workspace's CLI session)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve this call if it needs approval (allow once; no grant is kept)")
	return cmd
}

// openCLISystem opens the tool system with the approver config asks for,
// for one short-lived process: its sandbox runner has no warm pool (a
// single cold container per command, like `agentbox exec`), since
// starting and then draining a pool costs far more than the one call
// needs. `agentbox mcp` keeps the pool.
//
// yes (--yes) approves every question of this process once: the person
// who typed the command line is the approver.
func openCLISystem(ctx context.Context, a *app, cfg *config.Config, yes bool) (*workspace.Tools, error) {
	oneShot := *cfg
	oneShot.Sandbox.PoolSize = 0
	cfg = &oneShot
	var approver tools.Approver = cliDenyApprover{approver: cfg.Tools.Approver}
	switch {
	case yes:
		approver = yesApprover{}
	case cfg.Tools.Approver == "tty":
		approver = tools.NewTTYApprover(os.Stdin, a.stderr())
	case cfg.Tools.Approver == "auto":
		if isTerminal(os.Stdin) && isTerminal(os.Stderr) {
			approver = tools.NewTTYApprover(os.Stdin, a.stderr())
		}
	}
	var logger *slog.Logger
	if os.Getenv("AGENTBOX_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(a.stderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return workspace.Open(ctx, cfg, workspace.Options{Register: builtin.Register, Approver: approver, Logger: logger, OneShot: true})
}

// yesApprover allows every question once: `agentbox tool --yes`.
type yesApprover struct{}

func (yesApprover) Approve(ctx context.Context, _ tools.ApprovalRequest) (tools.Approval, error) {
	if err := ctx.Err(); err != nil {
		return tools.Approval{}, err
	}
	return tools.Approval{Allow: true, By: "cli-yes"}, nil
}

// cliDenyApprover is the CLI without anyone to ask: it refuses and says
// how a person could have been asked.
type cliDenyApprover struct{ approver string }

func (d cliDenyApprover) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Approval, error) {
	if err := ctx.Err(); err != nil {
		return tools.Approval{}, err
	}
	why := "agentbox tool has no terminal to ask on (stdin or stderr is not a terminal)"
	if d.approver == "deny" {
		why = "agentbox tool does not ask (tools.approver is deny)"
	}
	return tools.Approval{Allow: false, By: "non-interactive", Message: why + "; a person can approve this one call by running the same command with --yes, or run it in a terminal to be asked."}, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func printToolResult(a *app, resp tools.Response) error {
	if a.jsonOut {
		out := toolJSON{OK: resp.Err == nil, Content: resp.Content, Display: resp.Display, Error: resp.Err, CallID: resp.CallID, Meta: resp.Meta}
		if out.Meta == nil {
			out.Meta = map[string]any{}
		}
		if len(resp.Images) > 0 {
			out.Meta["images"] = len(resp.Images)
		}
		enc := json.NewEncoder(jsonWriter{a.stdout()})
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
		if !out.OK {
			return exitCode(1)
		}
		return nil
	}
	if resp.Content != "" && (resp.Err == nil || resp.Content != resp.Err.Message) {
		content := resp.Content
		if f, ok := a.stdout().(*os.File); ok && isTerminal(f) {
			// A person reads it: what the tool returned is untrusted.
			content = termtext.Escape(content)
		}
		fmt.Fprint(a.stdout(), content)
		if !strings.HasSuffix(resp.Content, "\n") {
			fmt.Fprintln(a.stdout())
		}
	}
	if resp.Err != nil {
		fmt.Fprintf(a.stderr(), "agentbox: %s: %s\n", termtext.Line(string(resp.Err.Kind)), termtext.Escape(resp.Err.Message))
		return exitCode(1)
	}
	return nil
}
