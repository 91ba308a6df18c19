package main

import (
	"encoding/json"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func init() { register(newConfigCmd) }

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the effective configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if a.jsonOut {
				// Go through YAML so JSON keys match the config file's.
				raw, err := yaml.Marshal(cfg)
				if err != nil {
					return err
				}
				var m map[string]any
				if err := yaml.Unmarshal(raw, &m); err != nil {
					return err
				}
				enc := json.NewEncoder(a.stdout())
				enc.SetIndent("", "  ")
				return enc.Encode(m)
			}
			enc := yaml.NewEncoder(a.stdout())
			enc.SetIndent(2)
			return enc.Encode(cfg)
		},
	})
	return cmd
}
