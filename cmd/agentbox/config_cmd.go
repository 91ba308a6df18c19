package main

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func init() { register(newConfigCmd) }

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the effective configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print the effective configuration. Each value is annotated with where it came
from: the built-in default, the user config file, an AGENTBOX_* variable, a
flag, or the workspace's .agentbox/config.yaml (which may only tighten).

With --json: {"config": {...}, "sources": {"section.key": "where", ...}}.`,
		Args: cobra.NoArgs,
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
				if mc, ok := m["mcp"].(map[string]any); ok && mc["bearer_token"] != "" && mc["bearer_token"] != nil {
					mc["bearer_token"] = "***"
				}
				sources := map[string]string{}
				for k := range config.KnownKeys() {
					sources[k] = cfg.Source(k)
				}
				enc := json.NewEncoder(a.stdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"config": m, "sources": sources})
			}
			var node yaml.Node
			if err := node.Encode(cfg); err != nil {
				return err
			}
			annotate(&node, "", cfg)
			enc := yaml.NewEncoder(a.stdout())
			enc.SetIndent(2)
			return enc.Encode(&node)
		},
	})
	return cmd
}

// annotate puts "# from: SOURCE" on every leaf value that did not come
// from the defaults, and "# default" on the rest.
func annotate(n *yaml.Node, prefix string, cfg *config.Config) {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			annotate(c, prefix, cfg)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		if v.Kind == yaml.MappingNode && isSection(key) {
			annotate(v, key+".", cfg)
			continue
		}
		src := cfg.Source(key)
		switch key {
		case "workspace", "state_dir":
			if src == "default" {
				src = "resolved at startup"
			}
		}
		if v.Kind == yaml.ScalarNode && v.Value != "" && (strings.Contains(key, "token") || strings.Contains(key, "secret") || strings.Contains(key, "password")) {
			v.Value = "***" // never print secrets
		}
		if v.Kind == yaml.ScalarNode || len(v.Content) == 0 {
			v.Style &^= yaml.FlowStyle
			v.LineComment = "# " + src
		} else {
			k.LineComment = "# " + src
		}
	}
}

func isSection(key string) bool {
	prefix := key + "."
	keys := make([]string, 0)
	for k := range config.KnownKeys() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
