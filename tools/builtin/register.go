package builtin

import (
	"fmt"

	"github.com/agentbox/agentbox/tools"
)

// All returns the built-in tools in the order agents usually list them.
func All() []tools.Tool {
	return []tools.Tool{Bash, BashOutput, KillShell, Glob, Grep, LS, Read, Edit, MultiEdit, Write}
}

// Register adds every built-in tool to reg as a builtin-sourced tool.
func Register(reg *tools.Registry) error {
	for _, t := range All() {
		if err := reg.Register(tools.SourceBuiltin, t); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	return nil
}
