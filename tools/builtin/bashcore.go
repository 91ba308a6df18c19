package builtin

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// exitExplanation says what a non-zero exit code usually means for the
// last simple command of a pipeline or list (argv0 is its program name,
// possibly empty), and whether the exit is a normal outcome rather than a
// failure (grep's 1 = no match).
func exitExplanation(argv0 string, code int, timedOut, oom bool) (text string, benign bool) {
	prog := path.Base(argv0)
	switch {
	case timedOut:
		return "the command ran out of time and was killed; pass a larger timeout (in milliseconds, at most 600000) or run it in the background", false
	case oom:
		return "the command ran out of memory and was killed (the sandbox's memory limit)", false
	case code == 0:
		return "", true
	}
	if code == 1 {
		switch prog {
		case "grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep", "git-grep":
			return "exit code 1 from " + prog + " means no lines matched; it is not an error", true
		case "diff", "cmp", "colordiff":
			return "exit code 1 from " + prog + " means the inputs differ; it is not an error", true
		case "test", "[", "[[":
			return "exit code 1 from test means the condition is false", true
		case "false":
			return "false always exits with 1", true
		case "find":
			return "exit code 1 from find means some paths could not be visited (see stderr)", false
		}
	}
	switch code {
	case 2:
		switch prog {
		case "grep", "egrep", "fgrep", "rg":
			return "exit code 2 from " + prog + " means an error (a bad pattern or an unreadable file), not a missing match", false
		}
		return "exit code 2 often means the command was used wrongly (bad option or argument)", false
	case 124:
		return "exit code 124 is what timeout(1) returns when the command it ran timed out", false
	case 125:
		return "exit code 125 usually means the command wrapper itself failed", false
	case 126:
		return "exit code 126 means the command was found but could not be executed (not executable, or a directory)", false
	case 127:
		return "exit code 127 means the command was not found: check its name, or whether it is installed in the sandbox's toolchain", false
	case 128 + 2:
		return "exit code 130 means the command was interrupted (SIGINT)", false
	case 128 + 6:
		return "exit code 134 means the command aborted (SIGABRT), often a failed assertion", false
	case 128 + 9:
		return "exit code 137 means the command was killed (SIGKILL), usually for running out of memory or time", false
	case 128 + 11:
		return "exit code 139 means the command crashed with a segmentation fault (SIGSEGV)", false
	case 128 + 13:
		return "exit code 141 means the command wrote to a closed pipe (SIGPIPE), common and harmless after head or grep -q", true
	case 128 + 15:
		return "exit code 143 means the command was terminated (SIGTERM)", false
	}
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("exit code %d means the command was killed by signal %d", code, code-128), false
	}
	return "", false
}

// lastProgram returns the program name of the last simple command in
// commands (the classifier's normalized argvs), skipping wrappers whose
// exit code is their child's.
func lastProgram(commands [][]string) string {
	for i := len(commands) - 1; i >= 0; i-- {
		argv := commands[i]
		for len(argv) > 0 {
			switch path.Base(argv[0]) {
			case "sudo", "nice", "nohup", "command", "exec", "time", "env":
				argv = argv[1:]
				for len(argv) > 0 && (strings.HasPrefix(argv[0], "-") || strings.Contains(argv[0], "=")) {
					argv = argv[1:]
				}
				continue
			}
			return argv[0]
		}
	}
	return ""
}

// guessProgram finds the last program of a command line when no verdict is
// at hand: the first word of the last pipeline element.
func guessProgram(command string) string {
	cmd := command
	for _, sep := range []string{"&&", "||", ";", "|", "\n"} {
		if i := strings.LastIndex(cmd, sep); i >= 0 {
			cmd = cmd[i+len(sep):]
		}
	}
	fields := strings.Fields(cmd)
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return ""
	}
	return strings.Trim(fields[0], `"'`)
}

// formatOutput joins a command's streams for the model: stdout, then
// stderr. Where the sandbox cut bytes out of a stream's middle, its
// marker line there (sandbox.Result) is the only note of the cut: none is
// added here.
func formatOutput(stdout, stderr string) string {
	var b strings.Builder
	for _, s := range []string{stdout, stderr} {
		if s == "" {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return strings.TrimRight(b.String(), "\n")
}

// omittedLine is the marker line the sandbox writes where it cut bytes
// out of a stream's middle (sandbox.Capture). filterLines keeps it, so
// that a filtered read still says that output is missing.
var omittedLine = regexp.MustCompile(`^\[\.\.\. [0-9]+ bytes omitted \.\.\.\]$`)

// filterLines keeps the lines of s that match matches, and the sandbox's
// marker lines of a cut (omittedLine).
func filterLines(s string, match func(string) bool) string {
	if s == "" {
		return s
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if match(l) || omittedLine.MatchString(l) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}
