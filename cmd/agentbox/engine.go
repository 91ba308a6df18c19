package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/sandbox/engine"
)

func init() { register(newEngineCmd) }

func newEngineCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Find, start or stop the Docker engine agentbox uses",
		Long: `agentbox uses the first Docker Engine API endpoint that answers: $DOCKER_HOST,
the engine.host config key, the default Docker socket, Podman's sockets, then
its own private dockerd under the state directory. "engine start" starts that
private dockerd (as root; installing Debian's docker.io if missing) when none
answers. With sandbox.runtime: runsc it also installs Debian's runsc and
registers it with the private engine (gVisor); with sandbox.backend: podman
only Podman endpoints count, and "engine start" runs ` + "`podman system service`" + `
under the state directory instead.`,
	}
	printInfo := func(info engine.Info) error {
		if a.jsonOut {
			enc := json.NewEncoder(a.stdout())
			return enc.Encode(info)
		}
		rt := ""
		if info.Runtime != "" {
			rt = ", runtime " + info.Runtime
		}
		remote := ""
		if info.Remote {
			remote = " — remote: the sandbox refuses it (it cannot see this machine's workspace)"
		}
		_, err := fmt.Fprintf(a.stdout(), "engine %s at %s (found via %s); sandbox backend %s%s%s\n", info.Version, info.Host, info.Source, info.Backend, rt, remote)
		return err
	}
	start := &cobra.Command{
		Use:   "start",
		Short: "Make sure an engine answers, starting the private dockerd if needed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(a.stderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			info, err := engine.Start(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			return printInfo(info)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say which engine is used and how it was found",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			cli, info, err := engine.Connect(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			cli.Close()
			return printInfo(info)
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop agentbox's private engine (never any other)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			err = engine.Stop(cmd.Context(), cfg)
			if errors.Is(err, engine.ErrNotRunning) {
				fmt.Fprintln(a.stderr(), "agentbox: the private engine is not running; nothing to stop")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stderr(), "private engine stopped")
			return nil
		},
	}
	unit := &cobra.Command{
		Use:   "unit",
		Short: "Print a systemd unit that keeps the private engine running",
		Long: `unit prints a systemd service that runs "agentbox engine start" at boot
(and "engine stop" when stopped), for operators who want the private engine
up before any agent starts. Install it as root:

  agentbox engine unit > /etc/systemd/system/agentbox-engine.service
  systemctl daemon-reload && systemctl enable --now agentbox-engine

It names this binary and this state directory; agentbox mcp, tool and exec
also start the engine by themselves when none answers (engine.auto_start).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			if real, err := filepath.EvalSymlinks(bin); err == nil {
				bin = real
			}
			_, err = io.WriteString(a.stdout(), unitText(bin, cfg.StateDir))
			return err
		},
	}
	cmd.AddCommand(start, status, stop, unit)
	return cmd
}
