package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/agentbox/agentbox/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// app carries the global flags and the lazily loaded configuration to
// every subcommand.
type app struct {
	configFile string
	jsonOut    bool
	root       *cobra.Command

	once sync.Once
	cfg  *config.Config
	err  error

	engineOnce sync.Once
	engineErr  error
}

// Config loads the configuration once, from defaults, the config file,
// AGENTBOX_* variables and the global flags.
func (a *app) Config() (*config.Config, error) {
	a.once.Do(func() {
		a.cfg, a.err = config.Load(config.LoadOptions{File: a.configFile, Flags: configFlags(a.root.PersistentFlags())})
		if a.err == nil && a.cfg.StateDirNote != "" {
			fmt.Fprintf(a.stderr(), "agentbox: %s\n", a.cfg.StateDirNote)
		}
	})
	return a.cfg, a.err
}

func (a *app) stdout() io.Writer { return a.root.OutOrStdout() }
func (a *app) stderr() io.Writer { return a.root.ErrOrStderr() }

// commands holds the constructors of the subcommands; each file adds its
// own from an init function.
var commands []func(*app) *cobra.Command

func register(fn func(*app) *cobra.Command) { commands = append(commands, fn) }

func newRoot() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "agentbox",
		Short: "Run an AI coding agent's tool calls contained, judged and reversible",
		Long: `agentbox runs an AI coding agent's tool calls safely.

Shell commands and file writes run in a fresh, hardened container that sees
only the workspace; every shell command is parsed and classified read_only,
dangerous or forbidden before it runs; every change is snapshotted so it can
be seen, undone, or rolled back.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	a.root = root
	pf := root.PersistentFlags()
	pf.String("workspace", "", "workspace directory (default: the current directory)")
	pf.StringVar(&a.configFile, "config", "", "config file (default: ~/.config/agentbox/config.yaml if present)")
	pf.String("state-dir", "", "state directory (default: $XDG_STATE_HOME/agentbox)")
	pf.BoolVar(&a.jsonOut, "json", false, "print machine-readable JSON")
	pf.String("mode", "", "permission mode: default, acceptEdits, plan, dontAsk or bypassPermissions (default: tools.mode; a project config can only make it stricter)")
	for _, fn := range commands {
		root.AddCommand(fn(a))
	}
	return root
}

// flagKeys maps global flags whose names are not their config keys to
// those keys.
var flagKeys = map[string]string{"mode": "tools.mode"}

// configFlags is the flag set config.Load binds by name: the global
// flags, with those of flagKeys renamed to their config keys.
func configFlags(pf *pflag.FlagSet) *pflag.FlagSet {
	out := pflag.NewFlagSet("config", pflag.ContinueOnError)
	pf.VisitAll(func(f *pflag.Flag) {
		key, ok := flagKeys[f.Name]
		if !ok {
			out.AddFlag(f)
			return
		}
		g := *f
		g.Name = key
		out.AddFlag(&g)
	})
	return out
}
