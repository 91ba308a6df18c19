//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	shwords "mvdan.cc/sh/v3/shell"
)

// CLI first calls: `agentbox tool` as a newcomer first runs it, and the
// fix a refusal names (run exactly as printed).

// grantCommand finds the grant command a refusal names.
var grantCommand = regexp.MustCompile("`(agentbox [^`]*grants add [^`]*)`")

// runNamed runs a command line a refusal printed, exactly as a shell
// would split it, with this build of agentbox and env.
func runNamed(t *testing.T, line string, env []string) string {
	t.Helper()
	words, err := shwords.Fields(line, nil)
	if err != nil || len(words) < 2 || words[0] != "agentbox" {
		t.Fatalf("not a command line: %q (%v)", line, err)
	}
	cmd := exec.Command(agentbox, words[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the named command %q failed: %v\n%s", line, err, out)
	}
	return string(out)
}

// TestCLIToolYesAndRefusal: without a terminal `agentbox tool` refuses a
// dangerous command and says how to allow it; --yes approves that one
// call and keeps no grant.
func TestCLIToolYesAndRefusal(t *testing.T) {
	e := newMCPEnv(t, "")
	in := `{"command":"touch yes.txt"}`
	out, code := e.agentboxCLI(t, "tool", "Bash", in)
	if code == 0 || !strings.Contains(out, "needs_approval") || !strings.Contains(out, "--yes") || !strings.Contains(out, "grants add") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if out, code = e.agentboxCLI(t, "tool", "--yes", "Bash", in); code != 0 {
		t.Fatalf("--yes: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "yes.txt")); err != nil {
		t.Fatal("--yes did not run the call")
	}
	if out, _ := e.agentboxCLI(t, "grants", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("--yes left a grant: %s", out)
	}
	// --mode on the command line: plan refuses the write outright.
	if out, code = e.agentboxCLI(t, "--mode", "plan", "tool", "--yes", "Bash", `{"command":"touch plan.txt"}`); code == 0 || !strings.Contains(out, "plan mode") {
		t.Fatalf("--mode plan: exit %d:\n%s", code, out)
	}
}

// TestCLIToolFirstCalls drives `agentbox tool` the way a person tries it
// first: reading a file twice shows it twice (one-shot calls have no
// conversation), a bad value is explained once in words, and a background
// shell is refused since it would die with the process.
func TestCLIToolFirstCalls(t *testing.T) {
	e := newMCPEnv(t, "")
	f := e.writeFile(t, "notes.txt", []byte("first line\n"))
	run := func(args ...string) (string, string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, agentbox, e.args(args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), 0
	}
	read := `{"file_path":"` + f + `"}`
	for i := 0; i < 2; i++ {
		out, errOut, code := run("tool", "Read", read)
		if code != 0 || !strings.Contains(out, "first line") || strings.Contains(out, "unchanged") {
			t.Errorf("Read #%d: code %d, stdout %q, stderr %q", i+1, code, out, errOut)
		}
	}
	cases := []struct {
		input string
		want  string
	}{
		{`{"file_path":"` + f + `","limit":-1}`, "limit must be at least 0; got -1"},
		{`{"file_path":"` + f + `","offset":-5}`, "offset must be at least 0; got -5"},
		{`{"file_path":"` + f + `","bogus":1}`, `unknown field "bogus"`},
	}
	for _, tc := range cases {
		out, errOut, code := run("tool", "Read", tc.input)
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("Read %s: code %d, stdout %q, stderr %q; want exit 1, one line on stderr with %q", tc.input, code, out, errOut, tc.want)
		}
		for _, raw := range []string{"/properties/", "0.000000", "/1 "} {
			if strings.Contains(errOut, raw) {
				t.Errorf("Read %s: raw schema text %q in %q", tc.input, raw, errOut)
			}
		}
	}
	out, errOut, code := run("tool", "Bash", `{"command":"sleep 30","run_in_background":true}`)
	if code != 1 || !strings.Contains(errOut, "one-shot") || !strings.Contains(errOut, "agentbox mcp") || strings.Contains(out+errOut, "BashOutput") {
		t.Errorf("background Bash from the CLI: code %d, stdout %q, stderr %q; want a clear refusal", code, out, errOut)
	}
}
