package config

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// MCP is the "mcp" section: how `agentbox mcp` serves the tools to an MCP
// client (stdio by default, streamable HTTP with --http).
type MCP struct {
	// HTTPAddr, when set, makes `agentbox mcp` serve streamable HTTP on this
	// address instead of stdio (--http ADDR overrides it). Every request
	// needs a bearer token (see BearerToken). Loopback unless BearerToken is
	// set. Empty: stdio.
	HTTPAddr string `mapstructure:"http_addr" yaml:"http_addr"`
	// BearerToken, when set, is the only token `agentbox mcp --http`
	// accepts ("Authorization: Bearer TOKEN" on every request). When empty
	// the token is the one in <state_dir>/frontdoor/mcp.token (created on
	// first use, mode 0600; `agentbox mcp token` names it, `agentbox mcp
	// token rotate` replaces it). It is mandatory for a non-loopback
	// address. Prefer AGENTBOX_MCP_BEARER_TOKEN over writing it into a file.
	BearerToken string `mapstructure:"bearer_token" yaml:"bearer_token"`
	// Elicit asks the human through MCP elicitation when a call needs
	// approval and the client supports it. When false, or when the client
	// cannot elicit, NonInteractive decides.
	Elicit bool `mapstructure:"elicit" yaml:"elicit"`
	// NonInteractive is the decision for a call that needs approval when
	// nobody can be asked: "deny" (the default) or "allow".
	NonInteractive string `mapstructure:"non_interactive" yaml:"non_interactive"`
	// ApprovalTimeout bounds how long an elicitation waits for the human;
	// no answer in time counts as deny.
	ApprovalTimeout time.Duration `mapstructure:"approval_timeout" yaml:"approval_timeout"`
	// ApprovalTTY, when set, is the absolute path of a terminal device (e.g.
	// /dev/pts/3: run `tty` in the operator's terminal) where `agentbox mcp`
	// asks a person when the client cannot elicit: allow once, always allow
	// the offered prefix, or deny; one question at a time across sessions,
	// bounded by approval_timeout. `agentbox mcp` refuses to start if it is
	// not a terminal; if it cannot be opened when a call needs approval,
	// non_interactive decides. Empty: off.
	ApprovalTTY string `mapstructure:"approval_tty" yaml:"approval_tty"`
	// HistoryTool exposes the optional History tool (recent calls and the
	// paths they changed).
	HistoryTool bool `mapstructure:"history_tool" yaml:"history_tool"`
	// UndoTool exposes the optional Undo tool (revert the last call or a
	// named one), so an agent can repair its own mistake.
	UndoTool bool `mapstructure:"undo_tool" yaml:"undo_tool"`
	// ProgressInterval is how often a long-running call reports progress
	// (and, for Bash, the output it has produced so far).
	ProgressInterval time.Duration `mapstructure:"progress_interval" yaml:"progress_interval"`
	// SessionIdleTimeout closes an HTTP session after this long without a
	// request (its background jobs are stopped). 0 keeps sessions forever.
	SessionIdleTimeout time.Duration `mapstructure:"session_idle_timeout" yaml:"session_idle_timeout"`
}

func defaultMCP() MCP {
	return MCP{
		Elicit:             true,
		NonInteractive:     "deny",
		ApprovalTimeout:    5 * time.Minute,
		ProgressInterval:   time.Second,
		SessionIdleTimeout: 30 * time.Minute,
	}
}

func (c *MCP) validate() error {
	switch c.NonInteractive {
	case "deny", "allow":
	default:
		return fmt.Errorf("mcp.non_interactive %q: want deny or allow", c.NonInteractive)
	}
	if c.ApprovalTTY != "" {
		if !filepath.IsAbs(c.ApprovalTTY) || filepath.Clean(c.ApprovalTTY) != c.ApprovalTTY {
			return fmt.Errorf("mcp.approval_tty %q: want the clean absolute path of a terminal device (run `tty` in that terminal)", c.ApprovalTTY)
		}
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("mcp.http_addr %q: want host:port: %v", c.HTTPAddr, err)
		}
	}
	if c.ApprovalTimeout <= 0 || c.ApprovalTimeout > time.Hour {
		return fmt.Errorf("mcp.approval_timeout %s: want more than 0 and at most 1h", c.ApprovalTimeout)
	}
	if c.ProgressInterval < 50*time.Millisecond || c.ProgressInterval > time.Minute {
		return fmt.Errorf("mcp.progress_interval %s: want between 50ms and 1m", c.ProgressInterval)
	}
	if c.SessionIdleTimeout < 0 {
		return fmt.Errorf("mcp.session_idle_timeout %s: must not be negative", c.SessionIdleTimeout)
	}
	if c.BearerToken != "" && len(c.BearerToken) < 16 {
		return fmt.Errorf("mcp.bearer_token: too short (want at least 16 characters)")
	}
	if c.BearerToken != "" && !frontdoor.WellFormed(c.BearerToken) {
		// Never quote it.
		return fmt.Errorf("mcp.bearer_token: want only A-Z a-z 0-9 - . _ ~ + / (and = at the end), as a bearer token may have (e.g. the output of `openssl rand -base64 32`)")
	}
	return nil
}
