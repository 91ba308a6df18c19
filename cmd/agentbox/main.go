// Command agentbox runs an AI coding agent's tool calls safely: shell
// commands and file writes in throwaway hardened containers, every shell
// command classified before it runs, every change snapshotted and undoable.
//
// Each subcommand lives in its own file and registers itself with
// register; this file only wires the root command and global flags.
package main

import (
	"errors"
	"fmt"
	"os"

	// Sandbox backends register themselves with sandbox.Register.
	_ "github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/tools/termtext"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	cmd, err := newRoot().ExecuteC()
	if err == nil {
		return
	}
	var ec exitCode
	if errors.As(err, &ec) {
		os.Exit(int(ec))
	}
	fmt.Fprintln(os.Stderr, "agentbox:", termtext.Escape(userMessage(cmd, err)))
	os.Exit(1)
}

// exitCode is returned by a command that has already reported what went
// wrong and only needs the process to exit with this status.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
