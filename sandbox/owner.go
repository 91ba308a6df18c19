package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// CheckOwner refuses a workspace owned by root unless allowRoot is set:
// sandboxed commands run as the workspace's owner, and agentbox never runs
// them as uid 0 by default (a root process is what turns any reachable
// root-owned socket or file into host root). The error wraps
// [ErrUnsafeWorkspace] and says, for a person, what to do. It needs no
// engine, so front ends can give the real reason before they try one.
func CheckOwner(ws string, allowRoot bool) error {
	fi, err := os.Stat(ws)
	if err != nil {
		return fmt.Errorf("%w: workspace: %w", ErrUnsafeWorkspace, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: workspace owner unknown", ErrUnsafeWorkspace)
	}
	if st.Uid == 0 && !allowRoot {
		return fmt.Errorf("%w: the workspace %s is owned by root, and agentbox never runs commands as root by default "+
			"(a root process is what turns any reachable root-owned socket or file into host root); "+
			"give the workspace to the unprivileged user the agent works for (`chown -R USER: %s`) or, knowing the risk, "+
			"set sandbox.allow_root_workspace: true in your user config",
			ErrUnsafeWorkspace, ws, ws)
	}
	return nil
}
