//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real Claude Code TUI, offline: the pinned CLI from npm runs
// interactively in tmux, its model is a small Messages API on loopback
// that answers with scripted tool calls, and its MCP server is agentbox as
// `agentbox setup claude-code` configured it. With
// tools.auto_allow_sandboxed off, `touch` asks, so Claude Code shows
// agentbox's elicitation form; the test reads the screen and presses the
// keys a person would, counting them.

// fakeModel is a Messages API that plays a script: the main loop's
// request (the one offering agentbox's Bash) gets the step for the number
// of tool results in the conversation so far — a Bash call, or, past the
// end, a closing text. Every other request (titles, summaries) gets a
// short text.
type fakeModel struct {
	commands []string // one Bash call per step

	mu       sync.Mutex
	results  []string // tool_result blocks the main loop sent back
	notReady int      // main-loop requests without agentbox's tools
	mainSeen int      // main-loop requests
	seen     []string // path and kind of every request, for failure output
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool                    `json:"stream"`
		Tools    []struct{ Name string } `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.HasPrefix(r.URL.Path, "/v1/messages/") {
		m.note(r.Method + " " + r.URL.Path + " -> 404")
		http.NotFound(w, r)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		m.note("bad request: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The main loop's requests offer tools; agentbox's are among them
	// once Claude Code has connected to it (it does not wait for that
	// before the first prompt).
	main, ours := len(req.Tools) > 0, false
	for _, tl := range req.Tools {
		ours = ours || tl.Name == "mcp__agentbox__Bash"
	}
	var results []string
	for _, msg := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		var raw []json.RawMessage
		if json.Unmarshal(msg.Content, &blocks) != nil || json.Unmarshal(msg.Content, &raw) != nil {
			continue
		}
		for i, b := range blocks {
			if b.Type == "tool_result" {
				results = append(results, string(raw[i]))
			}
		}
	}
	var block map[string]any
	var delta map[string]any
	stop := "end_turn"
	switch {
	case main && !ours:
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": "agentbox-not-connected-yet"}
	case main && len(results) < len(m.commands):
		id := fmt.Sprintf("toolu_agentbox_tui_%d", len(results))
		input, _ := json.Marshal(map[string]string{"command": m.commands[len(results)], "description": "Create a file"})
		block = map[string]any{"type": "tool_use", "id": id, "name": "mcp__agentbox__Bash", "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		stop = "tool_use"
	case main:
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": fmt.Sprintf("All %d commands ran.", len(results))}
	default:
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": "agentbox tui test"}
	}
	m.mu.Lock()
	if main {
		m.mainSeen++
	}
	if ours {
		m.results = results
	} else if main {
		m.notReady++
	}
	m.seen = append(m.seen, fmt.Sprintf("POST %s tools=%d agentbox=%v stream=%v results=%d stop=%s", r.URL.Path, len(req.Tools), ours, req.Stream, len(results), stop))
	m.mu.Unlock()

	msg := map[string]any{"id": "msg_agentbox_tui", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}
	if !req.Stream {
		final := block
		if delta["type"] == "text_delta" {
			final = map[string]any{"type": "text", "text": delta["text"]}
		} else {
			var in any
			json.Unmarshal([]byte(delta["partial_json"].(string)), &in)
			final = map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": in}
		}
		msg["content"], msg["stop_reason"] = []any{final}, stop
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": msg})
	send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (m *fakeModel) note(s string) {
	m.mu.Lock()
	m.seen = append(m.seen, s)
	m.mu.Unlock()
}

// counts returns the number of main-loop requests, and of those that
// came before agentbox's tools were offered.
func (m *fakeModel) counts() (main, notReady int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mainSeen, m.notReady
}

func (m *fakeModel) state() (results, seen []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...), append([]string(nil), m.seen...)
}

// claudeTUI is one interactive Claude Code in a private tmux server.
type claudeTUI struct {
	t      *testing.T
	tmux   string
	sock   string
	model  *fakeModel
	keys   []string // every key pressed after the prompt was sent
	client clientEnv
}

const claudeTUIKey = "sk-ant-agentbox-tui-test-not-a-real-key-0123456789"

func startClaudeTUI(t *testing.T, commands ...string) *claudeTUI {
	t.Helper()
	tmux := requireDebianTool(t, "tmux", "tmux")
	clients := agentClientsDir(t)
	c := newClientEnv(t)
	// The sandbox runs as the workspace's owner, never root.
	must(t, os.Chown(c.ws, wsUID, wsGID))
	c.run(t, "agentbox", "setup", "claude-code", "--project")
	// Every command asks: the project turns auto-allow off.
	must(t, os.MkdirAll(filepath.Join(c.ws, ".agentbox"), 0o755))
	must(t, os.WriteFile(filepath.Join(c.ws, ".agentbox", "config.yaml"), []byte("tools:\n  auto_allow_sandboxed: false\n"), 0o644))

	// What Claude Code records once a person has onboarded, approved the
	// API key, trusted the folder and approved the project's MCP server.
	state := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"numStartups":            3,
		"lastReleaseNotesSeen":   strings.TrimPrefix(claudeCodePkg, "@anthropic-ai/claude-code@"),
		"customApiKeyResponses":  map[string]any{"approved": []string{claudeTUIKey[len(claudeTUIKey)-20:]}, "rejected": []string{}},
		"projects": map[string]any{c.ws: map[string]any{
			"hasTrustDialogAccepted":        true,
			"hasCompletedProjectOnboarding": true,
			"enabledMcpjsonServers":         []string{"agentbox"},
			"allowedTools":                  []string{},
		}},
	}
	b, err := json.Marshal(state)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(c.home, ".claude.json"), b, 0o600))

	m := &fakeModel{commands: commands}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	sock := filepath.Join(t.TempDir(), "tmux.sock")
	env := append(append([]string(nil), c.env...),
		"ANTHROPIC_BASE_URL=http://"+ln.Addr().String(),
		"ANTHROPIC_API_KEY="+claudeTUIKey,
		"AGENTBOX_SANDBOX_IMAGE="+testImage,
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_COST_WARNINGS=1",
		"TERM=xterm-256color", "CI=", "NO_COLOR=")
	tui := &claudeTUI{t: t, tmux: tmux, sock: sock, model: m, client: c}
	args := []string{"-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-c", c.ws,
		filepath.Join(clients, "node_modules", ".bin", "claude")}
	cmd := exec.Command(tmux, args...)
	cmd.Env, cmd.Dir = env, c.ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	tui.tmuxRun("set-option", "-g", "remain-on-exit", "on")
	pid := strings.TrimSpace(tui.tmuxRun("display-message", "-p", "#{pane_pid}"))
	t.Cleanup(func() {
		if t.Failed() {
			res, seen := m.state()
			t.Logf("last screen:\n%s\nmodel requests:\n  %s\ntool results: %q", tui.screen(), strings.Join(seen, "\n  "), res)
		}
		exec.Command(tmux, "-S", sock, "kill-server").Run()
		// Claude Code writes its files under HOME until it has exited:
		// wait for that before the temporary directories go.
		eventually(20*time.Second, 200*time.Millisecond, func() bool {
			_, err := os.Stat("/proc/" + pid)
			return err != nil
		})
	})
	return tui
}

func (c *claudeTUI) tmuxRun(args ...string) string {
	c.t.Helper()
	out, err := exec.Command(c.tmux, append([]string{"-S", c.sock}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows now (empty when tmux is gone).
func (c *claudeTUI) screen() string {
	out, _ := exec.Command(c.tmux, "-S", c.sock, "capture-pane", "-p", "-J").Output()
	return string(out)
}

// waitFor polls the screen until ok accepts it, or fails the test with
// what it last showed.
func (c *claudeTUI) waitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := c.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// press sends keys a person would press (tmux key names), counting them.
func (c *claudeTUI) press(keys ...string) {
	c.t.Helper()
	for _, k := range keys {
		c.tmuxRun("send-keys", k)
		c.keys = append(c.keys, k)
		time.Sleep(300 * time.Millisecond)
	}
}

// TestClaudeTUIApproval: in the real Claude Code TUI, agentbox's form
// shows the whole command, escaped, with "Allow once" already chosen, and
// the person approves it with two keystrokes (Enter on the choice, Enter
// on Accept; Claude Code 2.1 always focuses a form's first field): the
// command runs in the workspace and is journaled. Choosing "always allow"
// takes four (→ to open the choices, ↓, Enter, Enter) and the next
// command with the same prefix runs without a form. A command with no
// prefix to offer "always allow" for gets a form without a field: one
// Enter on the focused Accept. Esc refuses with one keystroke.
func TestClaudeTUIApproval(t *testing.T) {
	t.Run("allow once", func(t *testing.T) {
		// A newline in the command: the form must show it escaped, on
		// one line, and the command whole.
		cmd := "touch \"tui once.txt\"\n: tail-of-the-command"
		c := startClaudeTUI(t, cmd)
		c.ask("create the file")
		form := c.waitFor("agentbox's approval form", 3*time.Minute, func(s string) bool { return strings.Contains(s, "Decision:") })
		for _, want := range []string{
			"agentbox: allow this Bash call?",
			`Bash: touch "tui once.txt"\n: tail-of-the-command`,
			"❯ ✔ Decision: ▸ Allow once", // focused, the default chosen
		} {
			if !strings.Contains(form, want) {
				t.Fatalf("the form lacks %q:\n%s", want, form)
			}
		}
		c.press("Enter")
		c.waitFor("focus on Accept", 30*time.Second, func(s string) bool { return strings.Contains(s, "❯ Accept") })
		c.press("Enter")
		c.waitFor("the model's closing text", 3*time.Minute, func(s string) bool { return strings.Contains(s, "All 1 commands ran.") })
		c.checkRan(t, "tui once.txt")
		if len(c.keys) != 2 {
			t.Fatalf("approving took %d keystrokes %q, want 2", len(c.keys), c.keys)
		}
	})
	t.Run("nothing to always allow", func(t *testing.T) {
		// No prefix to key a grant by (a control character, the program
		// known only at run time): the form has no field, Accept is
		// focused, one Enter allows once. The escape sequence shows
		// escaped instead of clearing the screen.
		c := startClaudeTUI(t, "$(printf touch) tui-bare.txt\n: \x1b[2J tail-of-the-command")
		c.ask("create the file")
		form := c.waitFor("agentbox's approval form", 3*time.Minute, func(s string) bool { return strings.Contains(s, "Accept allows this call once") })
		if !strings.Contains(form, `Bash: $(printf touch) tui-bare.txt\n: \x1b[2J tail-of-the-command`) ||
			!strings.Contains(form, "❯ Accept") || strings.Contains(form, "Decision") {
			t.Fatalf("want the whole command escaped, a form without fields, Accept focused:\n%s", form)
		}
		c.press("Enter")
		c.waitFor("the model's closing text", 3*time.Minute, func(s string) bool { return strings.Contains(s, "All 1 commands ran.") })
		c.checkRan(t, "tui-bare.txt")
		if len(c.keys) != 1 {
			t.Fatalf("approving took %d keystrokes %q, want 1", len(c.keys), c.keys)
		}
	})
	t.Run("deny", func(t *testing.T) {
		c := startClaudeTUI(t, "touch tui-denied.txt")
		c.ask("create the file")
		c.waitFor("agentbox's approval form", 3*time.Minute, func(s string) bool { return strings.Contains(s, "Decision:") })
		time.Sleep(time.Second) // a person reads it first
		c.press("Escape")
		c.waitFor("the model's closing text", 3*time.Minute, func(s string) bool { return strings.Contains(s, "All 1 commands ran.") })
		results, _ := c.model.state()
		if len(results) != 1 || !strings.Contains(results[0], `"is_error":true`) || !strings.Contains(results[0], "dismissed") {
			t.Fatalf("want one refused call, got %q", results)
		}
		if _, err := os.Stat(filepath.Join(c.client.ws, "tui-denied.txt")); err == nil {
			t.Fatal("the dismissed command ran")
		}
		if len(c.keys) != 1 {
			t.Fatalf("refusing took %d keystrokes %q, want 1", len(c.keys), c.keys)
		}
	})
	t.Run("always allow", func(t *testing.T) {
		c := startClaudeTUI(t, "touch tui-always-1.txt", "touch tui-always-2.txt")
		c.ask("create two files")
		c.waitFor("agentbox's approval form", 3*time.Minute, func(s string) bool { return strings.Contains(s, "Decision:") })
		c.press("Right")
		open := c.waitFor("the choices", 30*time.Second, func(s string) bool { return strings.Contains(s, "Deny") })
		once, always, deny := strings.Index(open, "Allow once"), strings.Index(open, `Always allow "touch" (this session)`), strings.Index(open, "Deny")
		if once < 0 || always < once || deny < always {
			t.Fatalf("choices not in the order allow once, always allow \"touch\", deny:\n%s", open)
		}
		c.press("Down", "Enter")
		c.waitFor("focus on Accept", 30*time.Second, func(s string) bool {
			return strings.Contains(s, "❯ Accept") && strings.Contains(s, `Decision: Always allow "touch"`)
		})
		c.press("Enter")
		// The second touch asks nothing: the script only ends if it ran.
		c.waitFor("the model's closing text", 3*time.Minute, func(s string) bool { return strings.Contains(s, "All 2 commands ran.") })
		c.checkRan(t, "tui-always-1.txt", "tui-always-2.txt")
		if len(c.keys) != 4 {
			t.Fatalf("always allow took %d keystrokes %q, want 4", len(c.keys), c.keys)
		}
	})
}

// ask waits for Claude Code's prompt and submits text (not counted: it is
// the request, not the approval).
func (c *claudeTUI) ask(text string) {
	c.t.Helper()
	for end := time.Now().Add(3 * time.Minute); ; {
		c.waitFor("Claude Code's prompt", 2*time.Minute, func(s string) bool { return strings.Contains(s, "? for shortcuts") })
		mainBefore, before := c.model.counts()
		c.tmuxRun("send-keys", "-l", text)
		c.waitFor("the typed prompt", 30*time.Second, func(s string) bool { return strings.Contains(s, text) })
		c.tmuxRun("send-keys", "Enter")
		// Asked before agentbox was connected, the model answers that
		// it is not: ask again a little later.
		if !eventually(2*time.Minute, 100*time.Millisecond, func() bool { n, _ := c.model.counts(); return n > mainBefore }) {
			c.t.Fatalf("the prompt reached no model")
		}
		if _, n := c.model.counts(); n == before {
			return
		}
		if time.Now().After(end) {
			c.t.Fatalf("Claude Code never offered agentbox's tools to the model")
		}
		c.waitFor("the answer to the early prompt", time.Minute, func(s string) bool { return strings.Contains(s, "agentbox-not-connected-yet") })
		time.Sleep(2 * time.Second)
	}
}

// checkRan checks that every tool result the model got was a success,
// that each file exists in the workspace, and that the journal recorded
// each one's creation.
func (c *claudeTUI) checkRan(t *testing.T, files ...string) {
	t.Helper()
	results, _ := c.model.state()
	if len(results) != len(files) {
		t.Fatalf("the model got %d tool results, want %d: %q", len(results), len(files), results)
	}
	for _, r := range results {
		if strings.Contains(r, `"is_error":true`) {
			t.Fatalf("a call failed: %s", r)
		}
	}
	var hist []struct {
		Tool    string `json:"tool"`
		Summary string `json:"summary"`
		Changes []struct{ Path, Op string }
	}
	out := c.client.run(t, "agentbox", "history", "--json")
	must(t, json.Unmarshal([]byte(out), &hist))
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(c.client.ws, f)); err != nil {
			t.Fatalf("the approved command did not run: %v", err)
		}
		found := false
		for _, h := range hist {
			for _, ch := range h.Changes {
				found = found || (h.Tool == "Bash" && ch.Op == "added" && strings.HasSuffix(ch.Path, f))
			}
		}
		if !found {
			t.Fatalf("the journal has no Bash call that added %s:\n%s", f, out)
		}
	}
}
