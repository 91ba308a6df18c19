package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// hookConfig is a config file a host program reads before it runs what
// the config says: its commands' named files are protected.
type hookConfig struct {
	names []string
	// tool and when say who runs it, for the reason.
	tool, when string
	// runKeys hold shell commands; pathKeys hold paths the tool loads or
	// runs (protected even before they exist).
	runKeys, pathKeys []string
	// hooks: its presence makes a git hook runner present.
	hooks bool
}

var hookConfigs = []hookConfig{
	{names: []string{"lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.toml", ".lefthook.yml", ".lefthook.yaml",
		".lefthook.json", ".lefthook.toml", "lefthook-local.yml", "lefthook-local.yaml", "lefthook-local.json", "lefthook-local.toml",
		".lefthook-local.yml", ".lefthook-local.yaml", ".lefthook-local.json", ".lefthook-local.toml",
		".config/lefthook.yml", ".config/lefthook.yaml", ".config/lefthook-local.yml", ".config/lefthook-local.yaml"},
		tool: "lefthook", when: "on git commit, checkout, merge and push",
		runKeys: []string{"run"}, pathKeys: []string{"rc", "extends", "source_dir", "source_dir_local", "lefthook"}, hooks: true},
	{names: []string{".pre-commit-config.yaml", ".pre-commit-config.yml"},
		tool: "pre-commit", when: "on git commit", runKeys: []string{"entry"}, hooks: true},
	{names: []string{".lintstagedrc", ".lintstagedrc.json", ".lintstagedrc.yaml", ".lintstagedrc.yml"},
		tool: "lint-staged", when: "from a git hook", runKeys: []string{"*"}, hooks: true},
	{names: []string{".claude/settings.json", ".claude/settings.local.json", ".mcp.json", ".cursor/mcp.json", ".gemini/settings.json",
		".vscode/tasks.json", ".vscode/mcp.json", ".devcontainer/devcontainer.json", ".devcontainer.json", ".codex/config.toml"},
		tool: "an editor or agent", when: "when the folder is opened or the agent starts (hooks, MCP servers, folder-open tasks)",
		runKeys: []string{"command", "postCreateCommand", "postStartCommand", "postAttachCommand", "onCreateCommand",
			"updateContentCommand", "initializeCommand"}},
	// Yarn (berry) runs yarnPath instead of itself and loads every
	// plugin on every command, a hook's `yarn lint-staged` included, and
	// exports injectEnvironmentFiles (default .env.yarn) into every
	// script's environment.
	{names: []string{".yarnrc.yml", ".yarnrc.yaml"},
		tool: "yarn", when: "on every yarn command, a git hook's included",
		pathKeys: []string{"yarnPath", "path", "injectEnvironmentFiles"}},
	{names: []string{"mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise/config.toml", "mise/config.toml",
		".config/mise.toml", ".config/mise/config.toml"},
		tool: "mise", when: "when a shell enters the directory",
		runKeys: []string{"enter", "leave", "cd", "preinstall", "postinstall"}, pathKeys: []string{"file", "source", "path", "env_file"}},
}

// hookConfigs reads the hook managers' and loaders' configs at the
// workspace root (and lint-staged's key in package.json).
func (b *closureBuilder) hookConfigs() {
	for _, hc := range hookConfigs {
		for _, name := range hc.names {
			data, err := b.read(name)
			if err != nil {
				if !isNotExist(err) {
					b.failClosed("%s could not be read (%v): what it runs is unknown", name, err)
				}
				continue
			}
			if hc.hooks && b.c.hooks == "" {
				b.c.hooks = fmt.Sprintf("%s is present and %s runs hooks", name, hc.tool)
			}
			v, err := decodeConfig(name, data)
			if err != nil {
				b.failClosed("%s could not be parsed (%v): what it runs is unknown", name, err)
				if hc.hooks && b.c.hooks == "" {
					b.c.hooks = name + " could not be parsed"
				}
				continue
			}
			why := fmt.Sprintf("%s names it and %s runs it %s", name, hc.tool, hc.when)
			b.configTree(name, v, hc, why, "")
			if hc.tool == "yarn" {
				b.add(".env.yarn", why+" (injectEnvironmentFiles' default)")
			}
		}
	}
	if data, err := b.read("package.json"); err == nil {
		if m, err := jsonObject(data); err == nil {
			for _, k := range []string{"lint-staged", "nano-staged", "simple-git-hooks", "husky", "gitHooks", "pre-commit"} {
				if v, ok := m[k]; ok {
					b.configTree("package.json", v, hookConfig{runKeys: []string{"*"}},
						fmt.Sprintf("package.json's %q names it and a git hook runs it", k), k)
				}
			}
		}
	}
}

// decodeConfig decodes YAML (JSON is YAML) or TOML by file name.
func decodeConfig(name string, data []byte) (any, error) {
	var v any
	if strings.HasSuffix(name, ".toml") {
		err := toml.Unmarshal(data, &v)
		return v, err
	}
	err := yaml.Unmarshal(data, &v)
	return v, err
}

// configTree walks a decoded config: a string under a run key (any key
// with "*") is a shell command whose named files are protected; a string
// under a path key is protected as a path; any other string that names
// an existing file is protected too.
func (b *closureBuilder) configTree(file string, v any, hc hookConfig, why, key string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			b.configTree(file, x, hc, why, k)
		}
	case []any:
		for _, x := range v {
			b.configTree(file, x, hc, why, key)
		}
	case string:
		switch {
		case key == "repo" && v != "local" && v != "meta" && !strings.Contains(v, ":"):
			// pre-commit: a hook repository given as a local path is
			// cloned and its hooks run.
			if p, ok := b.local(".", v); ok && b.exists(p) {
				b.add(p, why)
			}
		case slices.Contains(hc.pathKeys, key):
			if p, ok := b.local(".", v); ok {
				b.add(p, why)
			}
		case slices.Contains(hc.runKeys, key) || slices.Contains(hc.runKeys, "*"):
			b.shellNames(file, []byte(v), ".", why)
		default:
			b.addFile(".", v, why)
		}
	case json.Number, nil, bool, int, int64, float64:
	}
}
