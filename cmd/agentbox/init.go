package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/sandbox/initproc"
)

func init() { register(newInitCmd) }

// newInitCmd is the in-container init (PID 1 of every sandbox container);
// hidden, it is not for people.
func newInitCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "init",
		Short:  "In-container init of the sandbox (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := initproc.Main(os.Stdin, os.Stdout, os.Stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
