//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// symlinkEnv is a workspace whose project config denies reading secrets/
// and editing src/ (besides the built-in Edit(/.agentbox/**)), with
// symlinks that lead into those directories, into .git/hooks, and out.
func symlinkEnv(t *testing.T) mcpEnv {
	t.Helper()
	e := newMCPEnv(t, "")
	e.writeFile(t, ".agentbox/config.yaml", []byte("tools:\n  deny:\n    - \"Read(./secrets/**)\"\n    - \"Edit(./src/**)\"\n"))
	e.writeFile(t, "src/a.go", []byte("package src\n"))
	e.writeFile(t, "secrets/key", []byte("TOPSECRET\n"))
	e.writeFile(t, "notes/plain.txt", []byte("TOPSECRET is just a word here\n"))
	e.writeFile(t, ".git/hooks/README", []byte("hooks\n"))
	e.writeFile(t, ".git/config", []byte("[core]\n"))
	for link, target := range map[string]string{
		"lib": "src", "shh": "secrets", "keylink": "secrets/key", "conf": ".agentbox",
		"hooks": ".git/hooks", "gitdir": ".git", "notes/deep": "../secrets", "out": "/etc",
	} {
		p := filepath.Join(e.ws, link)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		must(t, os.Lchown(p, wsUID, wsGID))
	}
	return e
}

// TestSymlinkRuleBypassesRefused: Symlink rule bypasses for Read, Write,
// Edit and Grep are refused — through the real binary, config loading and
// sandbox.
func TestSymlinkRuleBypassesRefused(t *testing.T) {
	e := symlinkEnv(t)
	tests := []struct {
		name, tool, input string
		ok                bool
		kind              string   // error kind when !ok ("" any)
		has, hasNot       []string // in content or error message
		absent            string   // must not exist afterwards
	}{
		{name: "Read through a symlinked dir", tool: "Read", input: `{"file_path":"shh/key"}`, kind: "permission_denied", has: []string{"Read(./secrets/**)", "resolves to"}, hasNot: []string{"TOPSECRET"}},
		{name: "Read a symlink to a denied file", tool: "Read", input: `{"file_path":"keylink"}`, kind: "permission_denied", has: []string{"Read(./secrets/**)"}, hasNot: []string{"TOPSECRET"}},
		{name: "Read out of the workspace", tool: "Read", input: `{"file_path":"out/passwd"}`, kind: "permission_denied", has: []string{"leads out of the workspace"}, hasNot: []string{"root:"}},
		{name: "Write a new file through a symlinked dir", tool: "Write", input: `{"file_path":"lib/new.go","content":"package evil\n"}`, kind: "permission_denied", has: []string{"Edit(./src/**)"}, absent: "src/new.go"},
		{name: "Edit through a symlinked dir", tool: "Edit", input: `{"file_path":"lib/a.go","old_string":"src","new_string":"evil"}`, kind: "permission_denied", has: []string{"Edit(./src/**)"}},
		{name: "Write the project policy through a symlink", tool: "Write", input: `{"file_path":"conf/config.yaml","content":"tools: {}\n"}`, kind: "permission_denied", has: []string{"Edit(/.agentbox/**)"}},
		{name: "Write a new policy file through a symlink", tool: "Write", input: `{"file_path":"conf/more.yaml","content":"x"}`, kind: "permission_denied", has: []string{"Edit(/.agentbox/**)"}, absent: ".agentbox/more.yaml"},
		{name: "Write a git hook through a symlink", tool: "Write", input: `{"file_path":"hooks/pre-commit","content":"#!/bin/sh\necho pwned\n"}`, absent: ".git/hooks/pre-commit"},
		{name: "Read git config through a symlinked .git", tool: "Read", input: `{"file_path":"gitdir/config"}`, ok: true, has: []string{"[core]"}},
		{name: "Write git config through a symlinked .git", tool: "Write", input: `{"file_path":"gitdir/config","content":"[core]\n\thooksPath = /tmp\n"}`},
		{name: "Grep a symlinked denied dir", tool: "Grep", input: `{"pattern":"TOPSECRET","path":"shh"}`, kind: "permission_denied", has: []string{"Read(./secrets/**)"}},
		{name: "Grep the parent", tool: "Grep", input: `{"pattern":"TOPSECRET","output_mode":"content"}`, ok: true, has: []string{"notes/plain.txt"}, hasNot: []string{"secrets/key", "TOPSECRET\n"}},
		{name: "Glob the parent", tool: "Glob", input: `{"pattern":"**/*"}`, ok: true, has: []string{"notes/plain.txt"}, hasNot: []string{"secrets", "keylink", "notes/deep"}},
		{name: "LS the parent", tool: "LS", input: `{"path":"` + e.ws + `"}`, ok: true, has: []string{"notes/"}, hasNot: []string{"secrets", "keylink", "shh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := e.agentboxCLI(t, "tool", tt.tool, tt.input, "--json")
			var res struct {
				OK      bool   `json:"ok"`
				Content string `json:"content"`
				Error   *struct {
					Kind, Message string
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("exit %d, output %q: %v", code, out, err)
			}
			text := res.Content
			if res.Error != nil {
				text += "\n" + res.Error.Message
			}
			if res.OK != tt.ok {
				t.Fatalf("ok %v, want %v: %s", res.OK, tt.ok, text)
			}
			if !tt.ok && tt.kind != "" && (res.Error == nil || res.Error.Kind != tt.kind) {
				t.Fatalf("error %+v, want kind %s: %s", res.Error, tt.kind, text)
			}
			for _, s := range tt.has {
				if !strings.Contains(text, s) {
					t.Errorf("result lacks %q: %s", s, text)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(text, s) {
					t.Errorf("result shows %q: %s", s, text)
				}
			}
			if tt.absent != "" {
				if _, err := os.Lstat(filepath.Join(e.ws, tt.absent)); err == nil {
					t.Errorf("%s exists after the call: %s", tt.absent, text)
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".agentbox/config.yaml")); !strings.Contains(string(b), "Edit(./src/**)") {
		t.Errorf("the project policy was rewritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "src/a.go")); string(b) != "package src\n" {
		t.Errorf("src/a.go = %q", b)
	}
}

// termPTY is a pseudo-terminal for a child process: the child gets the
// slave as stdin and stderr; the test reads what it shows from the master.
type termPTY struct {
	master, slave *os.File
	mu            sync.Mutex
	shown         bytes.Buffer
}

func newTermPTY(t *testing.T) *termPTY {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the slave: %v", err)
	}
	p := &termPTY{master: m, slave: s}
	t.Cleanup(func() { s.Close(); m.Close() })
	go func() {
		b := make([]byte, 4096)
		for {
			k, err := m.Read(b)
			p.mu.Lock()
			p.shown.Write(b[:k])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

func (p *termPTY) waitFor(t *testing.T, s string) string {
	t.Helper()
	var out string
	if !eventually(90*time.Second, 10*time.Millisecond, func() bool {
		p.mu.Lock()
		out = p.shown.String()
		p.mu.Unlock()
		return strings.Contains(out, s)
	}) {
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("the terminal never showed %q; it shows %q", s, p.shown.String())
	}
	return out
}

// rawControl returns the first control character (other than newline,
// tab and the CR a terminal adds to each newline) in s, or -1.
func rawControl(s string) rune {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e {
			return r
		}
	}
	return -1
}

// TestTerminalEscapesCommandText runs a command carrying CSI, OSC 52 and
// C1 sequences: the TTY approval prompt (on a real pty) and `agentbox
// history` show them escaped, never raw.
func TestTerminalEscapesCommandText(t *testing.T) {
	e := newMCPEnv(t, "")
	// The command erases the question's lines and redraws a harmless one,
	// writes the clipboard, and hides its tail behind a bidi override.
	command := "echo pwned > out.txt; echo \x1b[1A\x1b[2K\x1b[1A\x1b[2K\rBash: ls; printf '\x1b]52;c;ZXZpbA==\x07'; echo \u009b2J \u202eexe.sh"
	input, _ := json.Marshal(map[string]string{"command": command})
	p := newTermPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, e.args("tool", "Bash", string(input))...)
	var stdout bytes.Buffer
	cmd.Stdin, cmd.Stderr, cmd.Stdout = p.slave, p.slave, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shown := p.waitFor(t, "[y]es / [N]o")
	if _, err := p.master.WriteString("y\n"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Fatalf("agentbox tool exited %d: %s\n%s", ee.ExitCode(), stdout.String(), shown)
	}
	for _, want := range []string{`echo \x1b[1A\x1b[2K\x1b[1A\x1b[2K`, `\x1b]52;c;ZXZpbA==\x07`, `\u009b2J`, `\u202eexe.sh`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the prompt lacks %q:\n%q", want, shown)
		}
	}
	if r := rawControl(shown); r >= 0 {
		t.Errorf("the prompt sent %U raw to the terminal:\n%q", r, shown)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "out.txt")); string(b) != "pwned\n" {
		t.Fatalf("the approved command did not run: out.txt = %q", b)
	}

	out, code := e.agentboxCLI(t, "history")
	if code != 0 {
		t.Fatalf("history exited %d: %s", code, out)
	}
	for _, want := range []string{`\x1b[1A\x1b[2K`, "A out.txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}
	if r := rawControl(out); r >= 0 {
		t.Errorf("history printed %U raw:\n%q", r, out)
	}
}

// TestMCPApprovalTTYEscapesCommandText: `agentbox mcp` asking on
// mcp.approval_tty (a real pty) shows a command's escape sequences
// escaped, for a client that cannot elicit.
func TestMCPApprovalTTYEscapesCommandText(t *testing.T) {
	p := newTermPTY(t)
	e := newMCPEnv(t, "  approval_tty: "+p.slave.Name()+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(agentbox, e.args("mcp")...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost())
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "escape-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	command := "echo pwned > out.txt; echo \x1b[1A\x1b[2K; printf '\x1b]52;c;ZXZpbA==\x07'; echo \u009b2J \u202eexe.sh"
	type answer struct {
		res *mcpsdk.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := sess.CallTool(ctx, &mcpsdk.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": command}})
		done <- answer{res, err}
	}()
	shown := p.waitFor(t, "[y]es / [N]o")
	if _, err := p.master.WriteString("n\n"); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "Reason for the agent") // optional: an empty line skips it
	if _, err := p.master.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !a.res.IsError {
		t.Errorf("a denied call succeeded: %+v", a.res)
	}
	for _, want := range []string{"agentbox mcp: session", `echo \x1b[1A\x1b[2K`, `\x1b]52;c;ZXZpbA==\x07`, `\u009b2J`, `\u202eexe.sh`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the prompt lacks %q:\n%q", want, shown)
		}
	}
	if r := rawControl(shown); r >= 0 {
		t.Errorf("the prompt sent %U raw to the terminal:\n%q", r, shown)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "out.txt")); err == nil {
		t.Error("the denied command ran")
	}
}
