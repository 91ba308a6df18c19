package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/agentbox/agentbox/tools"
	"github.com/spf13/cobra"
)

func init() { register(newToolsCmd) }

func newToolsCmd(a *app) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "tools [--format mcp|openai|anthropic|gemini]",
		Short: "Print the tool declarations",
		Long: `Print the tools agents can call. Without --format: a table of name, kind,
source and summary; tools that deny rules refuse entirely are left out, and in
plan mode only the tools that can run read-only are listed. With --format: a JSON array of declarations in that
format (mcp, openai function calling, anthropic, gemini). --json alone is
--format mcp.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			sys, err := openCLISystem(cmd.Context(), a, cfg, false)
			if err != nil {
				return err
			}
			defer sys.Close(context.WithoutCancel(cmd.Context()))
			list := sys.Visible()
			if format == "" && a.jsonOut {
				format = string(tools.FormatMCP)
			}
			if format == "" {
				tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tSOURCE\tSUMMARY")
				for _, t := range list {
					src, _ := sys.Registry.SourceOf(t.Name())
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name(), t.Kind(), src, t.Description().Summary)
				}
				return tw.Flush()
			}
			decls, err := tools.DeclareAll(list, tools.Format(format))
			if err != nil {
				return err
			}
			enc := json.NewEncoder(a.stdout())
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(decls)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "declaration format: mcp, openai, anthropic or gemini")
	return cmd
}
