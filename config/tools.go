package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Tools is the "tools" section: permissions, limits and approvals of the
// tool pipeline.
type Tools struct {
	// Mode is the permission mode: default, acceptEdits, plan, dontAsk or
	// bypassPermissions.
	Mode string `mapstructure:"mode" yaml:"mode"`
	// Allow, Ask and Deny are permission rules in Claude Code's syntax
	// (`Bash(npm run test:*)`, `Edit(./src/**)`, `Read(//etc/**)`),
	// applied deny → ask → allow. A project config may add deny and ask
	// rules, never allow rules. The default denies edits of the project
	// config itself (an agent must not rewrite its own policy).
	Allow []string `mapstructure:"allow" yaml:"allow"`
	Ask   []string `mapstructure:"ask" yaml:"ask"`
	Deny  []string `mapstructure:"deny" yaml:"deny"`
	// AutoAllowSandboxed runs a shell command judged dangerous (never a
	// forbidden one) without asking in the default and acceptEdits modes
	// when it is contained: it runs in the sandbox (no network), its
	// changes are journaled and can be undone, and changes to protected
	// paths are reverted unless a person approves them. Deny and ask rules
	// still apply; when the sandbox or the snapshot store is unavailable
	// the call asks as before. false asks about every such command. A
	// project config may only set it to false.
	AutoAllowSandboxed bool `mapstructure:"auto_allow_sandboxed" yaml:"auto_allow_sandboxed"`
	// ReadOnlyDirs are absolute directories outside the workspace that
	// read-only tools (Read, Glob, Grep, LS) may read.
	ReadOnlyDirs []string `mapstructure:"read_only_dirs" yaml:"read_only_dirs"`
	// MaxOutputBytes caps the text a call returns to the model (head and
	// tail kept).
	MaxOutputBytes int `mapstructure:"max_output_bytes" yaml:"max_output_bytes"`
	// MaxInputBytes caps a call's JSON input.
	MaxInputBytes int `mapstructure:"max_input_bytes" yaml:"max_input_bytes"`
	// Parallelism bounds concurrency-safe calls run at once in a batch.
	Parallelism int `mapstructure:"parallelism" yaml:"parallelism"`
	// Approver for the CLI: "auto" (a TTY prompt when stdin and stderr are
	// terminals, else deny), "tty", or "deny".
	Approver string `mapstructure:"approver" yaml:"approver"`
	// Discovery is a command (argv) that prints tool declarations as a
	// JSON array of {name, description, input_schema}; each discovered
	// tool runs `argv... run NAME` in the sandbox with its input as JSON
	// on stdin. Empty: no discovery.
	Discovery []string `mapstructure:"discovery" yaml:"discovery"`
}

func defaultTools() Tools {
	return Tools{
		Mode:  "default",
		Allow: []string{},
		Ask:   []string{},
		Deny:  []string{"Edit(/.agentbox/**)"},

		AutoAllowSandboxed: true,
		ReadOnlyDirs:       []string{},
		MaxOutputBytes:     30000,
		MaxInputBytes:      32 << 20,
		Parallelism:        10,
		Approver:           "auto",
		Discovery:          []string{},
	}
}

// toolModes are the permission modes, strictest first (kept here so that
// config does not import the tools packages).
var toolModes = []string{"plan", "dontAsk", "default", "acceptEdits", "bypassPermissions"}

func modeStrictness(m string) int {
	for i, x := range toolModes {
		if x == m {
			return len(toolModes) - i
		}
	}
	return -1
}

func (c *Tools) validate() error {
	if modeStrictness(c.Mode) < 0 {
		return fmt.Errorf("tools.mode %q: want one of %s", c.Mode, strings.Join(toolModes, ", "))
	}
	for _, list := range [][]string{c.Allow, c.Ask, c.Deny} {
		for _, r := range list {
			if strings.TrimSpace(r) == "" {
				return fmt.Errorf("tools: empty permission rule")
			}
		}
	}
	for _, d := range c.ReadOnlyDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("tools.read_only_dirs: %q is not absolute", d)
		}
	}
	if c.MaxOutputBytes < 1000 {
		return fmt.Errorf("tools.max_output_bytes %d: at least 1000", c.MaxOutputBytes)
	}
	if c.MaxInputBytes < 1<<10 {
		return fmt.Errorf("tools.max_input_bytes %d: at least 1024", c.MaxInputBytes)
	}
	if c.Parallelism < 1 || c.Parallelism > 256 {
		return fmt.Errorf("tools.parallelism %d: want 1..256", c.Parallelism)
	}
	switch c.Approver {
	case "auto", "tty", "deny":
	default:
		return fmt.Errorf("tools.approver %q: want auto, tty or deny", c.Approver)
	}
	return nil
}
