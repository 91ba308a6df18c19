//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A 1×1 PNG, for Read's image content.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

var allTools = []string{"Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "Bash", "BashOutput", "KillShell", "History", "Undo"}

// clientPlan is what the TypeScript client does over either transport:
// list and validate the tools, call each at least once (one call answered
// through elicitation with "allow once", one with "deny"), and cancel a
// long Bash call.
func clientPlan(e mcpEnv) []tsStep {
	p := func(n string) string { return filepath.Join(e.ws, n) }
	return []tsStep{
		{"op": "list"},
		{"op": "validate"},
		{"op": "call", "id": "read", "name": "Read", "args": map[string]any{"file_path": p("text.txt")}},
		{"op": "call", "id": "image", "name": "Read", "args": map[string]any{"file_path": p("dot.png")}},
		{"op": "call", "id": "ls", "name": "LS", "args": map[string]any{"path": e.ws}},
		{"op": "call", "id": "glob", "name": "Glob", "args": map[string]any{"pattern": "**/*.txt"}},
		{"op": "call", "id": "grep", "name": "Grep", "args": map[string]any{"pattern": "hello", "path": e.ws, "output_mode": "content", "-n": true}},
		{"op": "call", "id": "write", "name": "Write", "args": map[string]any{"file_path": p("new.txt"), "content": "created by Write\n"}},
		{"op": "call", "id": "edit", "name": "Edit", "args": map[string]any{"file_path": p("text.txt"), "old_string": "hello", "new_string": "hullo"}},
		{"op": "call", "id": "multiedit", "name": "MultiEdit", "args": map[string]any{"file_path": p("text.txt"), "edits": []any{
			map[string]any{"old_string": "hullo", "new_string": "hallo"},
			map[string]any{"old_string": "world", "new_string": "welt"},
		}}},
		{"op": "call", "id": "bash", "name": "Bash", "args": map[string]any{"command": "echo hello from the sandbox; cat text.txt"}},
		{"op": "call", "id": "stream", "name": "Bash", "args": map[string]any{"command": "for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.4; done"}, "elicit": []string{"allow_once"}},
		{"op": "call", "id": "approved", "name": "Bash", "args": map[string]any{"command": "touch approved.txt"}, "elicit": []string{"allow_once"}},
		{"op": "call", "id": "denied", "name": "Bash", "args": map[string]any{"command": "touch denied.txt"}, "elicit": []string{"deny"}},
		{"op": "call", "id": "bg", "name": "Bash", "args": map[string]any{"command": "sleep 1; echo bg-done", "run_in_background": true},
			"capture": map[string]any{"bg": `with ID: ([A-Za-z0-9_-]+)`}},
		{"op": "call", "id": "bashoutput", "name": "BashOutput", "args": map[string]any{"bash_id": "$bg"}, "until": "bg-done", "tries": 40, "interval_ms": 500},
		{"op": "call", "id": "bg2", "name": "Bash", "args": map[string]any{"command": "sleep 120", "run_in_background": true},
			"capture": map[string]any{"bg2": `with ID: ([A-Za-z0-9_-]+)`}},
		{"op": "call", "id": "kill", "name": "KillShell", "args": map[string]any{"shell_id": "$bg2"}},
		{"op": "call", "id": "kill2", "name": "KillShell", "args": map[string]any{"shell_id": "$bg2"}},
		{"op": "call", "id": "history", "name": "History", "args": map[string]any{}},
		{"op": "call", "id": "undo", "name": "Undo", "args": map[string]any{}},
		{"op": "call", "id": "always", "name": "Bash", "args": map[string]any{"command": "touch always1.txt"}, "elicit": []string{"always_allow"}},
		{"op": "call", "id": "always2", "name": "Bash", "args": map[string]any{"command": "touch always2.txt"}},
		{"op": "call", "id": "cancel", "name": "Bash", "args": map[string]any{"command": "sleep 61"}, "cancel_when_file": e.cancelFile, "cancel_after_ms": 50000},
		{"op": "sleep", "ms": 500},
	}
}

// byID indexes the results of a plan by their step ids.
func byID(t *testing.T, plan []tsStep, res []tsResult) map[string]tsResult {
	t.Helper()
	if len(res) != len(plan)+1 {
		t.Fatalf("got %d results for %d steps", len(res), len(plan))
	}
	out := map[string]tsResult{"connect": res[0]}
	for i, s := range plan {
		if id, ok := s["id"].(string); ok {
			out[id] = res[i+1]
		} else {
			out[fmt.Sprint(s["op"])] = res[i+1]
		}
	}
	return out
}

func setupClientWorkspace(t *testing.T, extra string) mcpEnv {
	e := newMCPEnv(t, extra)
	e.writeFile(t, "text.txt", []byte("hello world\n"))
	e.writeFile(t, "dot.png", tinyPNG)
	e.writeFile(t, "sub/more.txt", []byte("more hello\n"))
	return e
}

// watchContainer polls for the container running needle until stop is
// called and returns the first one found; when it finds it, it creates
// signal (the harness then cancels the call).
func watchContainer(ws, needle, signal string) (stop func() string) {
	done := make(chan struct{})
	var mu sync.Mutex
	var found string
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			id, _ := runningCommand(context.Background(), ws, needle)
			if id != "" {
				mu.Lock()
				if found == "" {
					found = id
					// Let the call run for a few progress intervals (1 s by
					// default) before it is cancelled, so that the progress
					// check below does not race the cancellation.
					time.AfterFunc(2500*time.Millisecond, func() { os.WriteFile(signal, nil, 0o644) })
				}
				mu.Unlock()
			}
		}
	}()
	return func() string { close(done); mu.Lock(); defer mu.Unlock(); return found }
}

func checkClientResults(t *testing.T, e mcpEnv, r map[string]tsResult, cancelled string) {
	t.Helper()
	// Tools and schemas.
	tl, _ := r["list"]["tools"].([]any)
	var names []string
	for _, x := range tl {
		m := x.(map[string]any)
		names = append(names, m["name"].(string))
		ann, _ := m["annotations"].(map[string]any)
		if ann == nil || ann["openWorldHint"] != false {
			t.Errorf("%s: annotations %v, want openWorldHint false", m["name"], ann)
		}
		if _, ok := ann["readOnlyHint"].(bool); !ok {
			t.Errorf("%s: no readOnlyHint", m["name"])
		}
	}
	for _, w := range allTools {
		if !slices.Contains(names, w) {
			t.Errorf("tool %s not listed (got %v)", w, names)
		}
	}
	schemas, _ := r["validate"]["schemas"].([]any)
	if len(schemas) != len(tl) {
		t.Errorf("validated %d schemas for %d tools", len(schemas), len(tl))
	}
	for _, x := range schemas {
		m := x.(map[string]any)
		if m["ok"] != true {
			t.Errorf("schema of %s does not compile with ajv: %v", m["name"], m["error"])
		}
	}
	// Every call that should succeed did.
	// Streamed output: progress notifications carried the output while
	// the command ran.
	var streamed strings.Builder
	prs, _ := r["stream"]["progress"].([]any)
	for _, p := range prs {
		m, _ := p.(map[string]any)
		if s, ok := m["message"].(string); ok {
			streamed.WriteString(s)
		}
	}
	if !strings.Contains(streamed.String(), "tick") {
		t.Errorf("no streamed output in %d progress notifications: %q", len(prs), streamed.String())
	}
	for _, id := range []string{"stream", "read", "image", "ls", "glob", "grep", "write", "edit", "multiedit", "bash", "approved", "bg", "bashoutput", "bg2", "kill", "history", "undo"} {
		res := r[id]
		if res["error"] != nil || res.isError() {
			t.Errorf("%s: failed: %v %s (kind %s)", id, res["error"], res.text(), res.errorKind())
		}
	}
	if !strings.Contains(r["read"].text(), "hello world") {
		t.Errorf("Read: %q", r["read"].text())
	}
	img := false
	for _, c := range r["image"]["content"].([]any) {
		m := c.(map[string]any)
		if m["type"] == "image" && m["mimeType"] == "image/png" && m["bytes"] == float64(len(tinyPNG)) {
			img = true
		}
	}
	if !img {
		t.Errorf("Read of a png: no image content: %v", r["image"]["content"])
	}
	for id, want := range map[string]string{"ls": "text.txt", "glob": "more.txt", "grep": "hello", "bash": "hello from the sandbox", "bashoutput": "bg-done", "history": "text.txt"} {
		if !strings.Contains(r[id].text(), want) {
			t.Errorf("%s: %q lacks %q", id, r[id].text(), want)
		}
	}
	if !strings.Contains(r["bash"].text(), "hallo welt") {
		t.Errorf("Bash did not see the edits: %q", r["bash"].text())
	}
	// Elicitation: asked with the command, class and reasons; allow once ran, deny refused.
	for id, answer := range map[string]string{"approved": "allow_once", "denied": "deny"} {
		el, _ := r[id]["elicitations"].([]any)
		if len(el) != 1 {
			t.Errorf("%s: %d elicitations, want 1", id, len(el))
			continue
		}
		m := el[0].(map[string]any)
		msg, _ := m["message"].(string)
		if !strings.Contains(msg, "touch") || !strings.Contains(msg, "class:") || m["answer"] != answer {
			t.Errorf("%s: elicitation %v", id, m)
		}
	}
	// KillShell is job control over the session's own jobs: never asked.
	for _, id := range []string{"kill", "kill2"} {
		if el, _ := r[id]["elicitations"].([]any); len(el) != 0 || r[id].errorKind() == "permission_denied" {
			t.Errorf("%s: %d elicitations, kind %s: %s", id, len(el), r[id].errorKind(), r[id].text())
		}
	}
	// "Always allow" granted the offered prefix (touch) for this session:
	// the second touch is not asked about and runs.
	if el, _ := r["always"]["elicitations"].([]any); len(el) != 1 || r["always"].isError() {
		t.Errorf("always: %d elicitations, error %v: %s", len(el), r["always"].isError(), r["always"].text())
	}
	if el, _ := r["always2"]["elicitations"].([]any); len(el) != 0 || r["always2"].isError() {
		t.Errorf("always2 after always-allow: %d elicitations, kind %s: %s", len(el), r["always2"].errorKind(), r["always2"].text())
	}
	for _, name := range []string{"always1.txt", "always2.txt"} {
		if _, err := os.Stat(filepath.Join(e.ws, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !r["denied"].isError() || r["denied"].errorKind() != "permission_denied" {
		t.Errorf("denied: %v (kind %s)", r["denied"], r["denied"].errorKind())
	}
	if _, err := os.Stat(filepath.Join(e.ws, "denied.txt")); err == nil {
		t.Errorf("denied.txt exists: the denied command ran")
	}
	// Undo reverted the newest change: approved.txt is gone again.
	if _, err := os.Stat(filepath.Join(e.ws, "approved.txt")); err == nil {
		t.Errorf("approved.txt still exists after Undo: %s", r["undo"].text())
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "text.txt")); string(b) != "hallo welt\n" {
		t.Errorf("text.txt = %q after Edit and MultiEdit", b)
	}
	// Cancellation: the call ended with an error, reported progress
	// while it ran, and its container is gone.
	c := r["cancel"]
	if c["error"] == nil {
		t.Errorf("cancelled call did not end in an error: %v", c)
	}
	if ms, _ := c["ms"].(float64); ms > 20000 {
		t.Errorf("cancelled call took %.0f ms", ms)
	}
	if pr, _ := c["progress"].([]any); len(pr) == 0 {
		t.Errorf("no progress notifications during the long call")
	}
	if cancelled == "" {
		t.Errorf("never saw the container running sleep 61 (cancelled call: %v)", c)
	} else {
		// sleep 61 would end by itself after a minute: the container must
		// be gone well before that.
		t0 := time.Now()
		for {
			_, err := cli.ContainerInspect(context.Background(), cancelled)
			if err != nil {
				t.Logf("container of the cancelled call gone %s after the call ended", time.Since(t0).Round(time.Millisecond))
				break
			}
			if time.Since(t0) > 40*time.Second {
				t.Errorf("container %s of the cancelled call still exists after %s", cancelled[:12], time.Since(t0).Round(time.Second))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// checkJournalAndAudit: every mutating call is journaled with the MCP
// session id, and the audit chain verifies.
func checkJournalAndAudit(t *testing.T, e mcpEnv) {
	t.Helper()
	out, code := e.agentboxCLI(t, "history", "--json")
	if code != 0 {
		t.Fatalf("agentbox history: %d %s", code, out)
	}
	if !strings.Contains(out, `"session": "mcp-`) && !strings.Contains(out, `"session":"mcp-`) {
		t.Errorf("history has no MCP session id:\n%s", out)
	}
	out, code = e.agentboxCLI(t, "audit", "verify")
	if code != 0 {
		t.Errorf("agentbox audit verify: %d %s", code, out)
	}
}

func TestMCPClientStdio(t *testing.T) {
	e := setupClientWorkspace(t, "")
	plan := clientPlan(e)
	stop := watchContainer(e.ws, "sleep 61", e.cancelFile)
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")}, "steps": plan})
	cancelled := stop()
	r := byID(t, plan, res)
	checkClientResults(t, e, r, cancelled)
	// The TypeScript client closes stdin, then sends SIGTERM after 2 s and
	// SIGKILL after 4 s: a server still removing its warm pool then dies
	// before it is done. What it leaves behind must be removed by the
	// reaper of the next agentbox that opens the sandbox.
	if list, _ := workspaceContainers(context.Background(), e.ws); len(list) > 0 {
		time.Sleep(5 * time.Second)
		if out, code := e.agentboxCLI(t, "exec", "--", "true"); code != 0 {
			t.Errorf("agentbox exec -- true: %d %s", code, out)
		}
		t.Logf("%d container(s) left by the stopped server, reaped by the next agentbox", len(list))
	}
	waitNoContainers(t, e.ws, 30*time.Second)
	checkJournalAndAudit(t, e)
}

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startHTTP runs `agentbox mcp --http addr` and waits until it answers.
// The returned stop ends it (also done at cleanup).
func startHTTP(t *testing.T, e mcpEnv, addr, token string) (stop func()) {
	t.Helper()
	cmd := exec.Command(agentbox, e.args("mcp", "--http", addr)...)
	cmd.Env = append(os.Environ(), "AGENTBOX_MCP_BEARER_TOKEN="+token)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("agentbox mcp --http output:\n%s", logs.String())
			}
		})
	}
	t.Cleanup(stop)
	if !eventually(20*time.Second, 100*time.Millisecond, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("agentbox mcp --http %s never listened:\n%s", addr, logs.String())
	}
	return stop
}

func TestMCPClientHTTP(t *testing.T) {
	e := setupClientWorkspace(t, "")
	addr := freeAddr(t)
	const token = "test-token-0123456789abcdef"
	stopServer := startHTTP(t, e, addr, token)
	url := "http://" + addr + "/mcp"

	// Without the bearer token: 401.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", resp.StatusCode)
	}

	plan := clientPlan(e)
	stop := watchContainer(e.ws, "sleep 61", e.cancelFile)
	res := runTS(t, map[string]any{"transport": "http", "url": url, "token": token, "steps": plan})
	cancelled := stop()
	r := byID(t, plan, res)
	checkClientResults(t, e, r, cancelled)
	stopServer()
	waitNoContainers(t, e.ws, 30*time.Second)
	checkJournalAndAudit(t, e)
}

// TestMCPHTTPRefusesOpenAddressWithoutToken: a non-loopback address needs
// a bearer token, or agentbox refuses to start.
func TestMCPHTTPRefusesOpenAddressWithoutToken(t *testing.T) {
	e := newMCPEnv(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, e.args("mcp", "--http", "0.0.0.0:0")...)
	cmd.Env = append(os.Environ(), "AGENTBOX_MCP_BEARER_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("agentbox mcp --http 0.0.0.0:0 without a token: err %v, ctx %v\n%s", err, ctx.Err(), out)
	}
	if !strings.Contains(string(out), "bearer token") {
		t.Errorf("refusal does not say what to do: %s", out)
	}
}
