package main

import "github.com/spf13/cobra"

func init() { register(newBenchCmd) }

// benchCommands holds the constructors of `agentbox bench` children; each
// benchmark's file adds its own from an init function.
var benchCommands []func(*app) *cobra.Command

func registerBench(fn func(*app) *cobra.Command) { benchCommands = append(benchCommands, fn) }

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentbox against its peers on this machine",
	}
	for _, fn := range benchCommands {
		cmd.AddCommand(fn(a))
	}
	return cmd
}
