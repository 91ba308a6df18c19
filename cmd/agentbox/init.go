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
	var expect string
	cmd := &cobra.Command{
		Use:    "init",
		Short:  "In-container init of the sandbox (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var want []initproc.ExpectedMount
			if cmd.Flags().Changed("expect") {
				var err error
				if want, err = initproc.DecodeExpect(expect); err != nil {
					return err
				}
				if want == nil {
					want = []initproc.ExpectedMount{}
				}
			}
			if code := initproc.Main(os.Stdin, os.Stdout, os.Stderr, want); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&expect, "expect", "", "the expected mount table (base64 JSON)")
	return cmd
}
