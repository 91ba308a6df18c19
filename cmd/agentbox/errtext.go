package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/snapshot"
)

// userMessage is the text `agentbox` prints for an error a command
// returned: written for the person at the terminal, not as a Go error
// chain. The error itself is unchanged (errors.Is still works on it); only
// its wording is. cmd is the command that failed (nil when unknown).
func userMessage(cmd *cobra.Command, err error) string {
	var nc *snapshot.NoCallError
	switch {
	case errors.As(err, &nc) && nc.NotAnID:
		return fmt.Sprintf("%q is not a call id: use one of the numbers `agentbox history` shows (such as 42 or 000042)", nc.ID)
	case errors.As(err, &nc):
		return fmt.Sprintf("no call %s in this workspace's history (see `agentbox history`)", strings.TrimLeft(nc.ID, "0"))
	}
	msg := err.Error()
	if errors.Is(err, snapshot.ErrNotFound) {
		msg = strings.TrimSuffix(strings.TrimPrefix(msg, "snapshot: "), ": "+snapshot.ErrNotFound.Error())
		if !strings.Contains(msg, "agentbox history") {
			msg += " (see `agentbox history`)"
		}
	}
	msg = syscallPrefix.ReplaceAllString(msg, "$2: ")
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		want := "a number"
		if m[3] == "Bool" {
			want = "true or false"
		}
		msg = fmt.Sprintf("%s wants %s, not %q", m[2], want, m[1])
	}
	if cmd != nil && isUsageError(msg) {
		msg += fmt.Sprintf(" (see `%s --help`)", cmd.CommandPath())
	}
	return msg
}

// syscallPrefix matches the system call name Go puts before a path in an
// *fs.PathError ("lstat /x: no such file or directory"): a person needs
// the path and the reason, not the call.
var syscallPrefix = regexp.MustCompile(`\b(lstat|stat|fstatat|open|openat|openat2|readlink|readlinkat|mkdir|mkdirat|rename|renameat|unlinkat|remove|chmod|fchmodat|chown|fchownat) (/[^:]*): `)

// badFlagValue matches pflag's error for a value of the wrong type.
var badFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: strconv\.Parse(Int|Uint|Float|Bool|Duration)?.*$`)

// isUsageError reports whether msg is cobra's or pflag's complaint about
// the command line (then the command's help is named).
func isUsageError(msg string) bool {
	for _, p := range []string{"requires at least", "accepts at most", "accepts ", "unknown flag", "unknown shorthand flag", "flag needs an argument", " wants a number", " wants true or false", "unknown command"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
