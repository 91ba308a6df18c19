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

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	shwords "mvdan.cc/sh/v3/shell"
)

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

// TestMCPNoElicitationRefusalNamesFix is a Gemini-style client: it does
// not declare elicitation, so nobody can be asked. The refusal must name
// what would allow the call, the grant command it names must work
// verbatim, and after it the same call runs.
func TestMCPNoElicitationRefusalNamesFix(t *testing.T) {
	e := newMCPEnv(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.Command(agentbox, e.args("mcp")...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "no-elicitation", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func() (*mcpsdk.CallToolResult, string) {
		res, err := sess.CallTool(ctx, &mcpsdk.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "touch made-by-grant.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return res, text.String()
	}
	res, text := call()
	if !res.IsError {
		t.Fatalf("a dangerous command ran with nobody to ask: %s", text)
	}
	for _, want := range []string{
		"nobody could be asked",
		"does not support elicitation",
		"mcp.approval_tty",
		"allow rule Bash(touch:*) to tools.allow",
		"--mode bypassPermissions",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "They said") || strings.Contains(text, "wrote:") {
		t.Errorf("refusal quotes a person where none spoke:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made-by-grant.txt")); err == nil {
		t.Fatal("the refused command ran")
	}
	m := grantCommand.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the refusal names no grant command:\n%s", text)
	}
	out := runNamed(t, m[1], []string{"AGENTBOX_STATE_DIR=" + e.state})
	if !strings.Contains(out, "project Bash(touch:*)") {
		t.Errorf("grants add printed %q", out)
	}
	// The project grant reaches the running server's next call.
	res, text = call()
	if res.IsError {
		t.Fatalf("the granted call was refused: %s", text)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made-by-grant.txt")); err != nil {
		t.Fatalf("the granted call did not run: %v", err)
	}
	// Revoked, it needs approval again.
	listed, _ := e.agentboxCLI(t, "grants", "list", "--json")
	id := regexp.MustCompile(`"id": "(g[0-9a-f]+)"`).FindStringSubmatch(listed)
	if id == nil {
		t.Fatalf("grants list --json: %s", listed)
	}
	if out, code := e.agentboxCLI(t, "grants", "revoke", id[1]); code != 0 {
		t.Fatalf("revoke: %s", out)
	}
	if res, text = call(); !res.IsError || !strings.Contains(text, "nobody could be asked") {
		t.Fatalf("after revoke the call was not refused: %s", text)
	}
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

// TestEngineAutoStart: with no engine reachable, `agentbox mcp` starts
// the private one by itself before serving, says so once on stderr and
// keeps stdout for the protocol; the next process finds it running.
func TestEngineAutoStart(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + filepath.Join(base, "home"), "AGENTBOX_STATE_DIR=" + state, "XDG_STATE_HOME=", "DOCKER_HOST="}
	stop := func() {
		cmd := exec.Command(agentbox, "engine", "stop")
		cmd.Env = append(os.Environ(), env...)
		cmd.CombinedOutput()
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serve := func() string {
		cmd := exec.Command(agentbox, "--workspace", ws, "mcp")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "autostart", Version: "1"}, nil)
		sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("MCP over stdio after an engine start: %v\n%s", err, stderr.String())
		}
		tl, err := sess.ListTools(ctx, nil)
		if err != nil || len(tl.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		sess.Close()
		return stderr.String()
	}
	first := serve()
	if strings.Count(first, "starting agentbox's private engine") != 1 || !strings.Contains(first, "private engine") || !strings.Contains(first, "ready at unix://") {
		t.Fatalf("first start, stderr:\n%s", first)
	}
	if second := serve(); strings.Contains(second, "starting") {
		t.Fatalf("the second process started the engine again:\n%s", second)
	}
}
