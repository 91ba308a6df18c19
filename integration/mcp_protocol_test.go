//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP protocol: what a client sees of `agentbox mcp` itself: replies
// to piped requests, names that are not UTF-8, tool schemas a strict
// client accepts, and a refusal that names its fix when the client
// cannot be asked.

// TestMCPStdioAnswersBeforeEOF pipes requests into the real binary with
// its input closed right after them (`printf ... | agentbox mcp`): every
// request must still get its reply, a slow tool call included.
func TestMCPStdioAnswersBeforeEOF(t *testing.T) {
	e := newMCPEnv(t, "")
	e.writeFile(t, "hello.txt", []byte("hello from the workspace\n"))
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
	cases := []struct {
		name  string
		lines []string
		want  map[string]string // reply id -> a substring of the reply
	}{
		{"initialize and list, no initialized notification", []string{
			initialize,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		}, map[string]string{"1": `"protocolVersion"`, "2": `"name":"Bash"`}},
		{"read and a slow command", []string{
			initialize,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"Read","arguments":{"file_path":"` + e.ws + `/hello.txt"}}}`,
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"sleep 2; echo slept-well"}}}`,
		}, map[string]string{"1": `"serverInfo"`, `"r"`: "hello from the workspace", "7": "slept-well"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for run := 0; run < 3; run++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cmd := exec.CommandContext(ctx, agentbox, e.args("mcp")...)
				cmd.Stdin = strings.NewReader(strings.Join(tc.lines, "\n") + "\n")
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				cancel()
				if err != nil {
					t.Fatalf("run %d: agentbox mcp: %v\nstderr: %s", run, err, errb.String())
				}
				got := map[string]string{}
				sc := bufio.NewScanner(&out)
				sc.Buffer(nil, 16<<20)
				for sc.Scan() {
					var m struct {
						ID json.RawMessage `json:"id"`
					}
					if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
						got[string(m.ID)] = sc.Text()
					}
				}
				for id, sub := range tc.want {
					if !strings.Contains(got[id], sub) {
						t.Errorf("run %d: reply %s = %.300q, want it to contain %q\nstderr: %s", run, id, got[id], sub, errb.String())
					}
				}
			}
		})
	}
}

// TestMCPNonUTF8Names: names that are not valid UTF-8 are shown by LS,
// Glob and Grep in the escaped form (\xHH), and Read and Write accept that
// form back for the raw bytes; a valid name that reads like an escape
// stays reachable through its own escaped form.
func TestMCPNonUTF8Names(t *testing.T) {
	e := newMCPEnv(t, "")
	e.writeFile(t, "caf\xe9.txt", []byte("latin-1 name, needle inside\n"))
	e.writeFile(t, `lit\x41.txt`, []byte("literal backslash name, needle too\n"))
	calls := func(lines ...string) map[string]string {
		t.Helper()
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, agentbox, e.args("mcp")...)
		cmd.Stdin = strings.NewReader(init + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + strings.Join(lines, "\n") + "\n")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("agentbox mcp: %v\n%s", err, errb.String())
		}
		got := map[string]string{}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
				var b strings.Builder
				for _, c := range m.Result.Content {
					b.WriteString(c.Text)
				}
				if m.Result.IsError {
					b.WriteString(" [isError]")
				}
				got[string(m.ID)] = b.String()
			}
		}
		return got
	}
	call := func(id int, tool string, args map[string]any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		return string(b)
	}
	shown, lit := e.ws+`/caf\xe9.txt`, e.ws+`/lit\x5cx41.txt`
	got := calls(
		call(1, "LS", map[string]any{"path": e.ws}),
		call(2, "Glob", map[string]any{"pattern": "*.txt", "path": e.ws}),
		call(3, "Grep", map[string]any{"pattern": "needle", "path": e.ws}),
		call(4, "Read", map[string]any{"file_path": shown}),
		call(5, "Read", map[string]any{"file_path": lit}),
		call(6, "Write", map[string]any{"file_path": e.ws + `/new\xff.txt`, "content": "written by name\n"}),
	)
	checks := []struct {
		id   string
		want []string
	}{
		{"1", []string{`- caf\xe9.txt`, `- lit\x5cx41.txt`}},
		{"2", []string{shown, lit}},
		{"3", []string{shown, lit}},
		{"4", []string{"latin-1 name, needle inside"}},
		{"5", []string{"literal backslash name, needle too"}},
	}
	for _, c := range checks {
		for _, w := range c.want {
			if !strings.Contains(got[c.id], w) || strings.Contains(got[c.id], "\ufffd") || strings.Contains(got[c.id], "[isError]") {
				t.Errorf("call %s = %q, want it to contain %q (and no U+FFFD, no error)", c.id, got[c.id], w)
			}
		}
	}
	if b, err := os.ReadFile(e.ws + "/new\xff.txt"); err != nil || string(b) != "written by name\n" {
		t.Errorf("Write to an escaped name: %q %v (result %q)", b, err, got["6"])
	}
}

// inspectorVersion is the MCP Inspector whose --strict schema check the
// declarations must pass without a warning.
const inspectorVersion = "2.12.0"

// TestInspectorStrictSchemas runs the real MCP Inspector CLI (from npm,
// installed once into the test cache) with --strict against `agentbox
// mcp`: every tool schema must pass without an error or a warning.
func TestInspectorStrictSchemas(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is required for the Inspector check (apt-get install npm): %v", err)
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(base, "agentbox-test", "inspector-"+inspectorVersion)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/inspector@"+inspectorVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install the Inspector: %v\n%s", err, out)
		}
	}
	e := newMCPEnv(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// After "--" the command line is the server's own (its --config is
	// not the Inspector's).
	// The Inspector hands the server only a few variables of its own
	// environment: pass the engine explicitly (else agentbox would start
	// a private engine in the test's state dir).
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", "--strict", "-e", "DOCKER_HOST=" + cli.DaemonHost(), "--method", "tools/list", "--", agentbox}, e.args("mcp")...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DOCKER_HOST="+cli.DaemonHost())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector --strict: %v\nstderr: %s", err, errb.String())
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list.Tools) < 10 {
		t.Fatalf("tools/list: %v, %d tools in %.300q", err, len(list.Tools), out.String())
	}
	if s := errb.String(); strings.Contains(s, "Warning") || strings.Contains(s, "Error") || strings.Contains(s, "warning") {
		t.Errorf("the Inspector's strict check is not clean:\n%s", s)
	}
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
