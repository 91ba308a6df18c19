package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
	mcpserver "github.com/agentbox/agentbox/tools/mcp"
)

// mcpDoorName names the MCP server's token file under the state dir.
const mcpDoorName = "mcp"

// mcpDoor is how `agentbox mcp` is reached when it does not serve stdio:
// a listener, and what stands in front of the handler on it.
type mcpDoor struct {
	listener net.Listener
	guard    func(http.Handler) http.Handler
	url      string // what the banner names
	how      string // how a client authenticates, for the banner
}

// openMCPDoor opens the listener for --http ADDR or --socket PATH. Over
// TCP every request needs the bearer token: mcp.bearer_token when set
// (it then is the only token), else the token file under the state dir,
// created on first use. Over the unix socket the kernel names the peer:
// only this uid and root get in.
func openMCPDoor(cfg *config.Config, httpAddr, socket string, log *slog.Logger) (*mcpDoor, error) {
	if socket != "" {
		if !filepath.IsAbs(socket) {
			abs, err := filepath.Abs(socket)
			if err != nil {
				return nil, err
			}
			socket = abs
		}
		// Sandboxed commands run as the workspace owner and see the
		// workspace: a socket there would let them in as "this uid".
		if ws, err := filepath.EvalSymlinks(cfg.Workspace); err == nil && (config.Within(socket, cfg.Workspace) || config.Within(config.ResolveExisting(socket), ws)) {
			return nil, fmt.Errorf("--socket %s is inside the workspace, where sandboxed commands (which run as the workspace owner) could reach it: put it outside, e.g. %s", socket, filepath.Join(cfg.StateDir, "run", "mcp.sock"))
		}
		l, err := frontdoor.ListenUnix(socket, frontdoor.WithLogger(log))
		if err != nil {
			return nil, fmt.Errorf("--socket: %w (use a path in a directory only you can enter, e.g. %s)", err, filepath.Join(cfg.StateDir, "run", "mcp.sock"))
		}
		return &mcpDoor{listener: l, guard: func(h http.Handler) http.Handler { return h },
			url: "unix:" + socket + " (path /mcp)", how: "only this user and root may connect"}, nil
	}
	if err := mcpserver.CheckListen(httpAddr, cfg.MCP.BearerToken); err != nil {
		return nil, err
	}
	v, hint, where, err := mcpVerifier(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return nil, err
	}
	opts := []frontdoor.Option{frontdoor.WithHint(hint), frontdoor.WithLogger(log)}
	return &mcpDoor{listener: l, guard: func(h http.Handler) http.Handler { return frontdoor.Require(v, h, opts...) },
		url: "http://" + l.Addr().String() + "/mcp", how: "every request needs the bearer token " + where}, nil
}

// mcpVerifier is the token an `agentbox mcp --http` of cfg requires, what
// a refused client is told, and where the token is (never the token).
func mcpVerifier(cfg *config.Config) (v frontdoor.Verifier, hint, where string, err error) {
	if cfg.MCP.BearerToken != "" {
		if err := checkExplicitToken(cfg); err != nil {
			return nil, "", "", err
		}
		return frontdoor.Fixed(cfg.MCP.BearerToken),
			"The token is this server's mcp.bearer_token setting (or AGENTBOX_MCP_BEARER_TOKEN).",
			"of mcp.bearer_token", nil
	}
	k, err := mcpKey(cfg)
	if err != nil {
		return nil, "", "", err
	}
	return k, fmt.Sprintf("The token is in %s on the server's host (readable only by its owner; `agentbox mcp token` prints the path); `agentbox setup CLIENT --http URL` writes it into a client's config.", k.Path()),
		"in " + k.Path(), nil
}

// mcpKey opens (creating on first use) the MCP token file.
func mcpKey(cfg *config.Config) (*frontdoor.Key, error) {
	k, err := frontdoor.Ensure(frontdoor.KeyPath(cfg.StateDir, mcpDoorName))
	if errors.Is(err, frontdoor.ErrInsecure) {
		return nil, fmt.Errorf("%w; run `agentbox mcp token rotate` to replace it with a new private one", err)
	}
	return k, err
}

// mcpKeyHealth reports a token file agentbox would refuse (for doctor); a
// missing one is fine (it is made on first use) and nothing is created.
func mcpKeyHealth(cfg *config.Config) error {
	if cfg.MCP.BearerToken != "" {
		return checkExplicitToken(cfg)
	}
	_, err := frontdoor.Load(frontdoor.KeyPath(cfg.StateDir, mcpDoorName))
	if errors.Is(err, frontdoor.ErrNoKey) {
		return nil
	}
	return err
}

// checkExplicitToken refuses an mcp.bearer_token read from a config
// file that other users can read: they may know it.
func checkExplicitToken(cfg *config.Config) error {
	f := cfg.SourceFile("mcp.bearer_token")
	if f == "" {
		return nil
	}
	if err := frontdoor.CheckPrivate(f); err != nil {
		return fmt.Errorf("mcp.bearer_token: %w; replace the token and make the file private (chmod 600), or set AGENTBOX_MCP_BEARER_TOKEN instead", err)
	}
	return nil
}

// mcpToken is the token clients of cfg's MCP server send.
func mcpToken(cfg *config.Config) (string, error) {
	if cfg.MCP.BearerToken != "" {
		if err := checkExplicitToken(cfg); err != nil {
			return "", err
		}
		return cfg.MCP.BearerToken, nil
	}
	k, err := mcpKey(cfg)
	if err != nil {
		return "", err
	}
	return k.Token()
}

func newMCPTokenCmd(a *app) *cobra.Command {
	var header bool
	cmd := &cobra.Command{
		Use:   "token [rotate]",
		Short: "Print the path of the MCP server's bearer token file (rotate: replace the token)",
		Long: `token prints the path of the file holding the bearer token that
"agentbox mcp --http" requires on every request (created on first use: 256
random bits, mode 0600, under the state dir). The token itself is never
printed, except with --header, which prints the JSON object
{"Authorization": "Bearer <token>"} that a client's header helper (Claude
Code's headersHelper) reads.

"agentbox mcp token rotate" replaces the token. Running servers refuse the old
one from their next request on; run "agentbox setup CLIENT --http URL" again
for clients whose config holds the token.

When mcp.bearer_token (or AGENTBOX_MCP_BEARER_TOKEN) is set, that token is the
only one the server accepts and the file is not used.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := tokenConfig(a)
			if err != nil {
				return err
			}
			if header {
				tok, err := mcpToken(cfg)
				if err != nil {
					return err
				}
				b, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + tok})
				fmt.Fprintln(a.stdout(), string(b))
				return nil
			}
			if cfg.MCP.BearerToken != "" {
				fmt.Fprintln(a.stderr(), "agentbox: mcp.bearer_token is set: servers of this configuration require it, not the token file")
			}
			k, err := mcpKey(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout(), k.Path())
			return nil
		},
	}
	cmd.Flags().BoolVar(&header, "header", false, `print {"Authorization": "Bearer <token>"} (for a client's header helper) instead of the path`)
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate",
		Short: "Replace the MCP server's bearer token; running servers refuse the old one from their next request",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := tokenConfig(a)
			if err != nil {
				return err
			}
			if cfg.MCP.BearerToken != "" {
				return errors.New("mcp.bearer_token (or AGENTBOX_MCP_BEARER_TOKEN) is set, and it is the token servers of this configuration require: change it there")
			}
			k, err := frontdoor.Rotate(frontdoor.KeyPath(cfg.StateDir, mcpDoorName))
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout(), k.Path())
			fmt.Fprintln(a.stderr(), "agentbox: token rotated; running servers refuse the old one from their next request. Clients set up with a header helper (Claude Code) pick it up by themselves; run `agentbox setup CLIENT --http URL` again for the others.")
			return nil
		},
	})
	return cmd
}

// tokenConfig is the configuration for the token commands. The token
// belongs to the state dir, not to a workspace, and a header helper runs
// wherever its client runs (the home directory too, which holds the
// default state dir and so is no valid workspace): unless --workspace is
// given, the configuration is loaded for an empty directory of its own.
func tokenConfig(a *app) (*config.Config, error) {
	if a.root.PersistentFlags().Changed("workspace") {
		return a.Config()
	}
	dir, err := os.MkdirTemp("", "agentbox-token-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(dir)
	return config.Load(config.LoadOptions{File: a.configFile, Flags: configFlags(a.root.PersistentFlags()), Getenv: func(k string) string {
		if k == "AGENTBOX_WORKSPACE" {
			return dir
		}
		return os.Getenv(k)
	}})
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
