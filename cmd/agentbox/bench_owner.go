package main

import "os"

// benchOwner gives a benchmark's temporary workspace to an ordinary user
// when agentbox runs as root: commands never run as uid 0 (root-owned
// workspaces are refused unless sandbox.allow_root_workspace).
func benchOwner(ws string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return os.Chown(ws, benchUID, benchUID)
}

// benchUID owns benchmark workspaces when agentbox runs as root.
const benchUID = 65532
