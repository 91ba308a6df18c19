package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

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
	cmd.AddCommand(start, status, stop)
	return cmd
}
