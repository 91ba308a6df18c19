package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// ensureEngine makes sure an engine answers before a command that runs
// sandboxed calls (mcp, tool, exec): when none does and engine.auto_start
// is on, it starts agentbox's private engine the way `agentbox engine
// start` does. Progress goes to stderr, never stdout (stdout may be the
// MCP stream), and only when something has to be started. It runs once
// per process; later calls return the first result.
func (a *app) ensureEngine(ctx context.Context, cfg *config.Config) error {
	a.engineOnce.Do(func() { a.engineErr = a.startEngine(ctx, cfg) })
	return a.engineErr
}

func (a *app) startEngine(ctx context.Context, cfg *config.Config) error {
	cli, _, err := engine.Connect(ctx, cfg)
	if err == nil {
		cli.Close()
		return nil
	}
	if !errors.Is(err, engine.ErrNoEngine) {
		return err
	}
	if !cfg.Engine.AutoStart {
		return fmt.Errorf("%w (engine.auto_start is off: run `agentbox engine start`)", err)
	}
	p := engine.PrivatePaths(cfg)
	fmt.Fprintf(a.stderr(), "agentbox: no Docker engine answers; starting agentbox's private engine (socket %s, log %s)...\n", p.Socket, p.Log)
	log := slog.New(slog.NewTextHandler(a.stderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	info, err := engine.Start(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("starting the private engine: %w", err)
	}
	fmt.Fprintf(a.stderr(), "agentbox: private engine %s ready at %s\n", info.Version, info.Host)
	return nil
}

// unitText is the systemd unit `agentbox engine unit` prints: it keeps
// agentbox's private engine running for every later agentbox process.
func unitText(bin, stateDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# agentbox's private Docker engine (no bridge, no iptables changes).
# Install: agentbox engine unit > /etc/systemd/system/agentbox-engine.service
#          systemctl daemon-reload && systemctl enable --now agentbox-engine
[Unit]
Description=agentbox private Docker engine
After=local-fs.target

[Service]
Type=oneshot
RemainAfterExit=yes
Environment=AGENTBOX_STATE_DIR=%s
ExecStart=%s engine start
ExecStop=%s engine stop
TimeoutStartSec=5min

[Install]
WantedBy=multi-user.target
`, systemdEscape(stateDir), systemdEscape(bin), systemdEscape(bin))
	return b.String()
}

// systemdEscape quotes a word for a unit file's command line or
// assignment: specifiers (%) doubled, and quotes when it holds blanks.
func systemdEscape(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if strings.ContainsAny(s, " \t\"'\\") {
		s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	return s
}
