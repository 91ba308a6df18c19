//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The front doors of issue 19: `agentbox mcp --http` on loopback used to
// serve anyone, so another local account (nobody) opened a session and
// ran commands as the workspace owner. Each door now asks who is there.

// nobodyUID is the other local account of the attack.
const nobodyUID = 65534

// syncBuf collects a server's output while it runs.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDoor runs `agentbox mcp` with doorArgs (--http ADDR or --socket
// PATH) and no AGENTBOX_MCP_BEARER_TOKEN, until ready reports true.
func startDoor(t *testing.T, e mcpEnv, ready func() bool, doorArgs ...string) *syncBuf {
	t.Helper()
	cmd := exec.Command(agentbox, e.args(append([]string{"mcp"}, doorArgs...)...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTBOX_MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := &syncBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agentbox mcp %v output:\n%s", doorArgs, logs.String())
		}
	})
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		if ready() {
			return true
		}
		select {
		case <-done:
			t.Fatalf("agentbox mcp %v exited:\n%s", doorArgs, logs.String())
		default:
		}
		return false
	}) {
		t.Fatalf("agentbox mcp %v never became ready:\n%s", doorArgs, logs.String())
	}
	return logs
}

// needCurl makes sure curl is installed (from Debian when missing).
func needCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "curl"}} {
		if out, err := exec.CommandContext(ctx, "apt-get", args...).CombinedOutput(); err != nil {
			t.Fatalf("curl is required (apt-get %s): %v\n%s", args[0], err, out)
		}
	}
}

// curlAs runs curl as uid (0: this process) and returns the HTTP status
// code ("000" when nothing answered), the body and curl's exit code.
func curlAs(t *testing.T, uid uint32, args ...string) (code, body string, exit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", append([]string{"-sS", "-w", "%{stderr}\n@@%{http_code}", "--max-time", "20"}, args...)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/"}
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("curl: %v", err)
	}
	msg, code, _ := strings.Cut(stderr.String(), "\n@@")
	return strings.TrimSpace(code), stdout.String() + msg, exit
}

const (
	initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"intruder","version":"1"}}}`
	mcpAccept      = "Accept: application/json, text/event-stream"
)

// mcpPost are curl arguments for one MCP POST with extra headers.
func mcpPost(url, body string, headers ...string) []string {
	args := []string{"-X", "POST", "-H", "Content-Type: application/json", "-H", mcpAccept, "--data", body}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	return append(args, url)
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestFrontDoorHTTP: over TCP every request needs the token from the 0600
// file; another uid gets 401 and cannot read the file; a real MCP client
// with the token works; a rotation shuts the old token out of the running
// server; the token never appears in the server's output.
func TestFrontDoorHTTP(t *testing.T) {
	needCurl(t)
	e := setupClientWorkspace(t, "")
	addr := freeAddr(t)
	url := "http://" + addr + "/mcp"
	keyPath := filepath.Join(e.state, "frontdoor", "mcp.token")
	logs := startDoor(t, e, func() bool {
		code, _, _ := curlAs(t, 0, url)
		return code != "000"
	}, "--http", addr)
	// The attack of issue 19, as it was made: nobody, no credential.
	if code, body, _ := curlAs(t, nobodyUID, mcpPost(url, initializeBody)...); code != "401" {
		t.Fatalf("nobody opened an MCP session without a credential: status %s: %.300s", code, body)
	}
	token := readToken(t, keyPath)
	fi, err := os.Stat(keyPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}
	var tokens []string
	tokens = append(tokens, token)

	t.Run("another uid is refused", func(t *testing.T) {
		pwned := filepath.Join(e.ws, "pwned-by-nobody")
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"touch ` + pwned + `"}}}`
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"no token", mcpPost(url, initializeBody)},
			{"no token, tools/call", mcpPost(url, call)},
			{"wrong token", mcpPost(url, initializeBody, "Authorization: Bearer 0123456789abcdef0123456789abcdef0123456789a")},
			{"blank token", mcpPost(url, initializeBody, "Authorization: Bearer ")},
			{"GET stream", []string{"-H", mcpAccept, url}},
		} {
			code, body, _ := curlAs(t, nobodyUID, tc.args...)
			if code != "401" {
				t.Errorf("%s: nobody got %s, want 401: %s", tc.name, code, body)
			}
			if strings.Contains(body, token) {
				t.Errorf("%s: the refusal carries the token", tc.name)
			}
			if !strings.Contains(body, "Authorization: Bearer <token>") || !strings.Contains(body, "agentbox mcp token") {
				t.Errorf("%s: the refusal does not say how to get in: %s", tc.name, body)
			}
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Error("nobody's command ran in the workspace")
		}
		// Nor can nobody read the token.
		cat := exec.Command("cat", keyPath)
		cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
		if out, err := cat.CombinedOutput(); err == nil || strings.Contains(string(out), token) {
			t.Errorf("nobody read the token file: %v", err)
		}
	})

	t.Run("a real client with the token", func(t *testing.T) {
		res := runTS(t, map[string]any{"transport": "http", "url": url, "token": token, "steps": []tsStep{
			{"op": "list"},
			{"op": "call", "name": "Bash", "args": map[string]any{"command": "echo front door open"}},
		}})
		if len(res) != 3 || !strings.Contains(res[2].text(), "front door open") || res[2].isError() {
			t.Fatalf("client results: %v", res)
		}
	})

	t.Run("rotation shuts the old token out", func(t *testing.T) {
		out, code := e.agentboxCLI(t, "mcp", "token", "rotate")
		if code != 0 || strings.Contains(out, token) {
			t.Fatalf("mcp token rotate: %d %s", code, out)
		}
		neu := readToken(t, keyPath)
		if neu == token {
			t.Fatal("rotate kept the token")
		}
		tokens = append(tokens, neu)
		if code, body, _ := curlAs(t, 0, mcpPost(url, initializeBody, "Authorization: Bearer "+token)...); code != "401" {
			t.Errorf("the old token after rotation: %s %s", code, body)
		}
		res := runTS(t, map[string]any{"transport": "http", "url": url, "token": neu, "steps": []tsStep{
			{"op": "call", "name": "Bash", "args": map[string]any{"command": "echo rotated door open"}},
		}})
		if len(res) != 2 || !strings.Contains(res[1].text(), "rotated door open") {
			t.Fatalf("client results with the new token: %v", res)
		}
	})

	t.Run("real clients set up by agentbox setup --http", func(t *testing.T) {
		agentClientsDir(t)
		c := newClientEnv(t)
		for i, kv := range c.env {
			if strings.HasPrefix(kv, "AGENTBOX_STATE_DIR=") {
				c.env[i] = "AGENTBOX_STATE_DIR=" + e.state
			}
		}
		c.run(t, "agentbox", "setup", "claude-code", "--user", "--http", url)
		c.run(t, "agentbox", "setup", "gemini-cli", "--user", "--http", url)
		// Gemini CLI starts no server, not even a user-level one, in a
		// folder the person has not trusted.
		trust := fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, c.ws)
		if err := os.WriteFile(filepath.Join(c.home, ".gemini", "trustedFolders.json"), []byte(trust), 0o600); err != nil {
			t.Fatal(err)
		}
		claudeUp := func() bool {
			out := c.run(t, "claude", "mcp", "list")
			return strings.Contains(out, "agentbox: "+url+" (HTTP) - ✔ Connected")
		}
		geminiUp := func() bool {
			out := c.run(t, "gemini", "mcp", "list")
			return strings.Contains(out, "agentbox: "+url+" (http) - Connected")
		}
		if !claudeUp() {
			t.Errorf("Claude Code did not connect through headersHelper:\n%s", c.run(t, "claude", "mcp", "list"))
		}
		if !geminiUp() {
			t.Errorf("Gemini CLI did not connect with the header setup wrote")
		}
		// After a rotation Claude Code's helper fetches the new token by
		// itself; Gemini CLI's file holds the old one until setup runs
		// again.
		e.agentboxCLI(t, "mcp", "token", "rotate")
		tokens = append(tokens, readToken(t, keyPath))
		if !claudeUp() {
			t.Error("Claude Code did not follow the rotation")
		}
		if geminiUp() {
			t.Error("Gemini CLI still connected with the rotated-out token")
		}
		c.run(t, "agentbox", "setup", "gemini-cli", "--user", "--http", url)
		if !geminiUp() {
			t.Error("Gemini CLI did not connect after setup ran again")
		}
	})

	t.Run("codex set up by agentbox setup --http", func(t *testing.T) {
		codex := codexBin(t)
		c := newClientEnv(t)
		for i, kv := range c.env {
			if strings.HasPrefix(kv, "AGENTBOX_STATE_DIR=") {
				c.env[i] = "AGENTBOX_STATE_DIR=" + e.state
			}
		}
		// The helper setup writes runs this wrapper, which notes each run.
		marker := filepath.Join(c.home, "helper-runs")
		wrapper := filepath.Join(c.home, "agentbox-wrapper")
		script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\nexec %s \"$@\"\n", marker, agentbox)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		c.run(t, "agentbox", "setup", "codex", "--user", "--http", url, "--command", wrapper)
		for round := range 2 {
			refusals := strings.Count(logs.String(), "refused a request")
			out := runCodexUntilConnected(t, codex, c, marker, round+1)
			if strings.Contains(out, "AuthRequired") || strings.Contains(out, "headers helper") {
				t.Errorf("round %d: Codex did not authenticate:\n%s", round, out)
			}
			if n := strings.Count(logs.String(), "refused a request"); n != refusals {
				t.Errorf("round %d: the server refused %d of Codex's requests", round, n-refusals)
			}
			// The second round runs after a rotation: the helper hands
			// Codex the new token.
			e.agentboxCLI(t, "mcp", "token", "rotate")
			tokens = append(tokens, readToken(t, keyPath))
		}
	})

	if l := logs.String(); !strings.Contains(l, "refused a request without a valid bearer token") {
		t.Errorf("the server logged no refusal:\n%s", l)
	}
	for _, tok := range tokens {
		if strings.Contains(logs.String(), tok) {
			t.Error("the server's output holds a token")
		}
	}
}

// TestFrontDoorSocket: `agentbox mcp --socket` serves its owner (and root)
// only: another uid cannot connect (0700 directory), and with the
// directory and socket opened up on purpose the kernel's SO_PEERCRED
// still names it and the server closes the connection unanswered.
func TestFrontDoorSocket(t *testing.T) {
	needCurl(t)
	e := newMCPEnv(t, "")
	sock := filepath.Join(e.state, "run", "mcp.sock")
	logs := startDoor(t, e, func() bool {
		_, err := os.Stat(sock)
		return err == nil
	}, "--socket", sock)
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v %v", fi.Mode(), err)
	}
	url := "http://agentbox/mcp"
	code, body, _ := curlAs(t, 0, append([]string{"--unix-socket", sock}, mcpPost(url, initializeBody)...)...)
	if code != "200" || !strings.Contains(body, "serverInfo") {
		t.Fatalf("the owner over the socket: %s %s", code, body)
	}

	// Another uid: the kernel refuses the connection (the path is not
	// reachable).
	code, body, exit := curlAs(t, nobodyUID, append([]string{"--unix-socket", sock}, mcpPost(url, initializeBody)...)...)
	if code != "000" || exit != 7 {
		t.Errorf("nobody over the socket: status %s, curl exit %d (want no connection, 7): %s", code, exit, body)
	}

	// Open the directory and the socket to everyone: the peer check alone
	// must hold.
	for d := filepath.Dir(sock); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(sock, 0o777)
	code, body, exit = curlAs(t, nobodyUID, append([]string{"--unix-socket", sock}, mcpPost(url, initializeBody)...)...)
	if code != "000" || exit == 0 || strings.Contains(body, "serverInfo") {
		t.Errorf("nobody through an opened socket: status %s, curl exit %d: %s", code, exit, body)
	}
	refusal := fmt.Sprintf(`msg="refused a connection from another user" socket=%s uid=%d`, sock, nobodyUID)
	if !eventually(5*time.Second, 50*time.Millisecond, func() bool { return strings.Contains(logs.String(), refusal) }) {
		t.Fatalf("no SO_PEERCRED refusal logged:\n%s", logs.String())
	}
}

// codexPkg is the real Codex CLI (from npm) whose http_headers_helper
// setup --http writes.
const codexPkg = "@openai/codex@0.169.0"

// codexBin installs Codex once into the tests' cache and returns it.
func codexBin(t *testing.T) string {
	t.Helper()
	return filepath.Join(npmCache(t, "codex-0.169.0", codexPkg), "node_modules", ".bin", "codex")
}

// runCodexUntilConnected starts `codex exec` (which connects its MCP
// servers before it asks a model; there is no model here, so it would
// retry forever), waits until the header helper has run runs times and
// Codex had a moment to connect, stops it and returns its output.
func runCodexUntilConnected(t *testing.T, codex string, c clientEnv, marker string, runs int) string {
	t.Helper()
	cmd := exec.Command(codex, "exec", "--skip-git-repo-check", "say hi")
	cmd.Dir = c.ws
	cmd.Env = append(c.env, "OPENAI_API_KEY=sk-agentbox-test-no-model")
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	if !eventually(60*time.Second, 100*time.Millisecond, func() bool {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "mcp token --header") >= runs
	}) {
		t.Fatalf("Codex never ran the header helper (%d runs wanted):\n%s", runs, out.String())
	}
	time.Sleep(3 * time.Second)
	return out.String()
}
