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
	"strings"
	"testing"
	"time"
)

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

// TestBenchSandboxUsesFoundEngine runs `agentbox bench sandbox` where the
// docker CLI's own choice of engine (DOCKER_HOST) answers nothing and
// agentbox finds the engine through engine.host: every docker CLI row
// must use the engine agentbox found.
func TestBenchSandboxUsesFoundEngine(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the docker CLI is needed for the docker-exec row: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, "--state-dir", t.TempDir(), "bench", "sandbox", "--n", "2", "--sustained", "2", "--json")
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/agentbox-test.sock", "AGENTBOX_ENGINE_HOST="+cli.DaemonHost(), "DOCKER_CONTEXT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench sandbox: %v\n%s", err, errb.String())
	}
	var rows []struct {
		Name  string  `json:"name"`
		P50MS float64 `json:"p50_ms"`
		N     int     `json:"n"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("bench --json: %v in %q", err, out.String())
	}
	got := map[string]bool{}
	for _, r := range rows {
		if r.N != 2 || r.P50MS <= 0 {
			t.Errorf("row %+v: want n=2 and a positive p50", r)
		}
		got[r.Name] = true
	}
	for _, want := range []string{"agentbox-pool", "docker-exec", "docker-run"} {
		if !got[want] {
			t.Errorf("no %s row in %s", want, out.String())
		}
	}
}

// TestExecAudited: `agentbox exec` leaves an audit record with the
// command, its exit code, container and journal entry, and `agentbox
// audit` shows the command.
func TestExecAudited(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		o, e, code := agentboxIn(t, ws, state, nil, args...)
		return o + e, code
	}
	if out, code := run("exec", "--", "echo audited > audited.txt; exit 3"); code != 3 {
		t.Fatalf("exec: code %d: %s", code, out)
	}
	out, code := run("--json", "audit")
	if code != 0 {
		t.Fatalf("audit: %d %s", code, out)
	}
	var recs []struct {
		Tool        string
		Input       struct{ Command string }
		ExitCode    *int     `json:"exit_code"`
		JournalID   string   `json:"journal_id"`
		ContainerID string   `json:"container_id"`
		Changed     []string `json:"changed"`
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(recs) != 1 {
		t.Fatalf("audit records: %s", out)
	}
	r := recs[0]
	if r.Tool != "exec" || r.Input.Command != "echo audited > audited.txt; exit 3" || r.ExitCode == nil || *r.ExitCode != 3 ||
		r.JournalID != "000001" || r.ContainerID == "" || len(r.Changed) != 1 || r.Changed[0] != "audited.txt" {
		t.Errorf("exec record: %s", out)
	}
	if table, _ := run("audit"); !strings.Contains(table, "echo audited > audited.txt; exit 3") {
		t.Errorf("audit table does not show the command:\n%s", table)
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
