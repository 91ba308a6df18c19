package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoConfig lets the project's own scripts run without asking (as a
// project would allow its test command), so that escape.sh reaches the
// sandbox and shows that the sandbox, not only the rules, contains it. It
// turns on the optional History and Undo tools.
const demoConfig = `tools:
  allow:
    - "Bash(sh test.sh)"
    - "Bash(sh escape.sh)"
mcp:
  history_tool: true
  undo_tool: true
`

type result struct {
	text    string
	isError bool
	kind    string // error kind when isError
	meta    map[string]any
}

func (d *demo) call(ctx context.Context, name string, args map[string]any) (*result, error) {
	if d.session == nil {
		return nil, errors.New("no MCP session")
	}
	res, err := d.session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := &result{isError: res.IsError}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			r.text += t.Text
		}
	}
	r.meta, _ = res.Meta["agentbox"].(map[string]any)
	if e, ok := r.meta["error"].(map[string]any); ok {
		r.kind, _ = e["kind"].(string)
	}
	if id, ok := r.meta["journal_id"].(string); ok && id != "" {
		d.journal = append(d.journal, id)
	}
	if d.verbose {
		d.detail(fmt.Sprintf("        %s → isError=%v kind=%s\n%s", name, r.isError, r.kind, indent(r.text)))
	}
	return r, nil
}

func indent(s string) string {
	return "        | " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n        | ")
}

func (d *demo) path(name string) string { return filepath.Join(d.ws, name) }

func (d *demo) listTools(ctx context.Context) (string, error) {
	if d.session == nil {
		return "", errors.New("no MCP session")
	}
	res, err := d.session.ListTools(ctx, nil)
	if err != nil {
		return "", err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	want := []string{"Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "Bash", "BashOutput", "KillShell", "History", "Undo"}
	var missing []string
	for _, w := range want {
		if !slices.Contains(names, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("missing tools %v (got %v)", missing, names)
	}
	return fmt.Sprintf("%d tools: %s", len(names), strings.Join(names, ", ")), nil
}

func (d *demo) readFiles(ctx context.Context) (string, error) {
	var parts []string
	for _, f := range []string{"README.md", "calc.sh", "test.sh"} {
		r, err := d.call(ctx, "Read", map[string]any{"file_path": d.path(f)})
		if err != nil {
			return "", err
		}
		if r.isError {
			return "", fmt.Errorf("reading %s: %s", f, r.text)
		}
		parts = append(parts, fmt.Sprintf("%s (%d lines)", f, strings.Count(strings.TrimRight(r.text, "\n"), "\n")+1))
	}
	r, err := d.call(ctx, "Grep", map[string]any{"pattern": "mul", "path": d.ws, "output_mode": "files_with_matches"})
	if err != nil {
		return "", err
	}
	if r.isError || !strings.Contains(r.text, "calc.sh") {
		return "", fmt.Errorf("grep for mul: %s", r.text)
	}
	return "Read " + strings.Join(parts, ", ") + "; Grep found mul in calc.sh", nil
}

func (d *demo) testsFail(ctx context.Context) (string, error) {
	r, err := d.call(ctx, "Bash", map[string]any{"command": "sh test.sh", "description": "run the tests"})
	if err != nil {
		return "", err
	}
	if !strings.Contains(r.text, "FAIL mul 6 7") {
		return "", fmt.Errorf("want the planted failure, got: %s", r.text)
	}
	if !strings.Contains(r.text, "ok   add 2 3") {
		return "", fmt.Errorf("the tests did not run: %s", r.text)
	}
	return "ran in the sandbox: add ok, sub ok, mul FAIL (got 13, want 42); exit status 1", nil
}

func (d *demo) edit(ctx context.Context) (string, error) {
	r, err := d.call(ctx, "Edit", map[string]any{
		"file_path":  d.path("calc.sh"),
		"old_string": "mul() { echo $(( $1 + $2 )); }",
		"new_string": "mul() { echo $(( $1 * $2 )); }",
	})
	if err != nil {
		return "", err
	}
	if r.isError {
		return "", fmt.Errorf("the Edit call was refused (%s): %s", r.kind, r.text)
	}
	b, err := os.ReadFile(d.path("calc.sh"))
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(b), "$(( $1 * $2 ))") {
		return "", fmt.Errorf("calc.sh not changed on disk")
	}
	if id, ok := r.meta["journal_id"].(string); ok {
		d.editID = id
	}
	return fmt.Sprintf("calc.sh changed (journal %s)", d.editID), nil
}

func (d *demo) testsPass(ctx context.Context) (string, error) {
	r, err := d.call(ctx, "Bash", map[string]any{"command": "sh test.sh", "description": "run the tests"})
	if err != nil {
		return "", err
	}
	if r.isError || !strings.Contains(r.text, "ok   mul 6 7") {
		return "", fmt.Errorf("tests still fail: %s", r.text)
	}
	if _, err := os.Stat(d.path("test-results.txt")); err != nil {
		return "", fmt.Errorf("the test run's side effect is missing: %v", err)
	}
	return "3/3 ok; the run left test-results.txt behind (a side effect to undo later)", nil
}

// refused checks that a call was refused with one of the kinds and that
// nothing ran.
func refused(r *result, kinds ...string) error {
	if !r.isError {
		return fmt.Errorf("not refused: %s", r.text)
	}
	if !slices.Contains(kinds, r.kind) {
		return fmt.Errorf("refused as %q, want one of %v: %s", r.kind, kinds, r.text)
	}
	return nil
}

// dangerous runs a destructive command from a client that cannot ask
// anyone: contained in the sandbox and journaled, it runs without a
// question (tools.auto_allow_sandboxed), the result says how to undo it,
// and the Undo tool brings the files back.
func (d *demo) dangerous(ctx context.Context) (string, error) {
	const command = "rm -rf build *.sh"
	r, err := d.call(ctx, "Bash", map[string]any{"command": command})
	if err != nil {
		return "", err
	}
	id, _ := r.meta["journal_id"].(string)
	if r.isError || r.meta["auto_allowed"] != "contained" || id == "" || !strings.Contains(r.text, "agentbox undo "+id) {
		return "", fmt.Errorf("the contained command did not run unasked with an undo: %s", r.text)
	}
	if _, err := os.Stat(d.path("calc.sh")); err == nil {
		return "", fmt.Errorf("calc.sh is still there after %s", command)
	}
	u, err := d.call(ctx, "Undo", map[string]any{"call_id": id})
	if err != nil {
		return "", err
	}
	if u.isError {
		return "", fmt.Errorf("the Undo tool on %s: %s", id, u.text)
	}
	if _, err := os.Stat(d.path("calc.sh")); err != nil {
		return "", fmt.Errorf("the Undo tool did not bring calc.sh back: %v", err)
	}
	return fmt.Sprintf("`%s` ran without asking (contained, journaled as %s); Undo brought calc.sh back", command, id), nil
}

func (d *demo) forbidden(ctx context.Context) (string, error) {
	const command = "rm -rf --no-preserve-root /"
	r, err := d.call(ctx, "Bash", map[string]any{"command": command})
	if err != nil {
		return "", err
	}
	if err := refused(r, "forbidden"); err != nil {
		return "", err
	}
	var reasons []string
	for _, l := range strings.Split(r.text, "\n") {
		if strings.HasPrefix(l, "- ") {
			reasons = append(reasons, strings.TrimPrefix(l, "- "))
		}
	}
	return fmt.Sprintf("`%s` → %s; why: %s", command, r.kind, strings.Join(reasons, "; ")), nil
}

func (d *demo) writeOutside(ctx context.Context) (string, error) {
	var out []string
	for _, p := range []string{"/etc/agentbox-demo", filepath.Join(d.ws, "..", "outside.txt"), "~/.bashrc"} {
		r, err := d.call(ctx, "Write", map[string]any{"file_path": p, "content": "pwned\n"})
		if err != nil {
			return "", err
		}
		if !r.isError {
			return "", fmt.Errorf("the Write to %s was allowed", p)
		}
		out = append(out, fmt.Sprintf("%s → %s", p, r.kind))
	}
	for _, p := range []string{"/etc/agentbox-demo", filepath.Join(filepath.Dir(d.ws), "outside.txt")} {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%s exists on the host", p)
		}
	}
	return strings.Join(out, "; "), nil
}

func (d *demo) escape(ctx context.Context) (string, error) {
	r, err := d.call(ctx, "Bash", map[string]any{"command": "sh escape.sh", "description": "try to escape"})
	if err != nil {
		return "", err
	}
	if r.isError && r.kind != "execution" {
		return "", fmt.Errorf("escape.sh did not run (%s): %s", r.kind, r.text)
	}
	if strings.Contains(r.text, "ESCAPED") {
		return "", fmt.Errorf("the sandbox leaked: %s", r.text)
	}
	blocked := strings.Count(r.text, "blocked:")
	if blocked < 6 {
		return "", fmt.Errorf("want 6 blocked attempts, got %d: %s", blocked, r.text)
	}
	for _, p := range []string{"/etc/agentbox-escape", filepath.Join(filepath.Dir(d.ws), "agentbox-escape")} {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%s exists on the host", p)
		}
	}
	var ifaces string
	for _, l := range strings.Split(r.text, "\n") {
		if strings.HasPrefix(l, "network interfaces:") {
			ifaces = strings.TrimSpace(strings.TrimPrefix(l, "network interfaces:"))
		}
	}
	return fmt.Sprintf("%d/6 blocked: /etc and ../ not writable, /etc/shadow and /root absent, no network (interfaces: %s), no docker socket", blocked, ifaces), nil
}

func (d *demo) historyTool(ctx context.Context) (string, error) {
	r, err := d.call(ctx, "History", map[string]any{})
	if err != nil {
		return "", err
	}
	if r.isError {
		return "", fmt.Errorf("the History call failed: %s", r.text)
	}
	if !strings.Contains(r.text, "calc.sh") {
		return "", fmt.Errorf("the history does not mention the edit of calc.sh: %s", r.text)
	}
	return fmt.Sprintf("%d lines, mentions the edit of calc.sh", strings.Count(r.text, "\n")+1), nil
}

type historyEntry struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	Changes []struct {
		Path string `json:"path"`
		Op   string `json:"op"`
	} `json:"changes"`
}

func (d *demo) historyEntries(ctx context.Context) ([]historyEntry, error) {
	out, code, err := d.agentbox(ctx, "history", "--json")
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("agentbox history exited %d: %s", code, out)
	}
	var hs []historyEntry
	if err := json.Unmarshal([]byte(out), &hs); err != nil {
		return nil, fmt.Errorf("agentbox history --json: %v", err)
	}
	return hs, nil
}

func (d *demo) history(ctx context.Context) (string, error) {
	hs, err := d.historyEntries(ctx)
	if err != nil {
		return "", err
	}
	if len(hs) < 3 {
		return "", fmt.Errorf("want at least 3 journaled calls (2 test runs, 1 edit), got %d", len(hs))
	}
	var parts []string
	for _, h := range hs {
		var ch []string
		for _, c := range h.Changes {
			ch = append(ch, c.Op+" "+c.Path)
		}
		parts = append(parts, fmt.Sprintf("%s %s [%s]", h.ID, h.Tool, strings.Join(ch, ", ")))
		if h.Tool == "Edit" && d.editID == "" {
			d.editID = h.ID
		}
	}
	return fmt.Sprintf("%d calls, newest first: %s", len(hs), strings.Join(parts, "; ")), nil
}

func (d *demo) diff(ctx context.Context) (string, error) {
	if d.editID == "" {
		return "", errors.New("no journal id for the edit")
	}
	out, code, err := d.agentbox(ctx, "diff", d.editID)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("agentbox diff exited %d: %s", code, out)
	}
	if !strings.Contains(out, "-mul() { echo $(( $1 + $2 )); }") || !strings.Contains(out, "+mul() { echo $(( $1 * $2 )); }") {
		return "", fmt.Errorf("the diff does not show the edit:\n%s", out)
	}
	d.detail(indent(out))
	return "shows -mul(+) / +mul(*) in calc.sh", nil
}

func (d *demo) undo(ctx context.Context) (string, error) {
	hs, err := d.historyEntries(ctx)
	if err != nil {
		return "", err
	}
	// Newest first: undo each call in turn.
	var undone []string
	for _, h := range hs {
		if len(h.Changes) == 0 {
			continue
		}
		out, code, err := d.agentbox(ctx, "undo", h.ID)
		if err != nil {
			return "", err
		}
		if code != 0 {
			return "", fmt.Errorf("agentbox undo %s exited %d: %s", h.ID, code, out)
		}
		undone = append(undone, h.ID+" ("+h.Tool+")")
	}
	dg, lines, err := treeDigest(d.ws)
	if err != nil {
		return "", err
	}
	if dg != d.digest0 {
		return "", fmt.Errorf("the workspace differs from the original after undo: %v", lines)
	}
	return fmt.Sprintf("undid %s; the workspace is byte-for-byte the original (digest %s)", strings.Join(undone, ", "), dg), nil
}

func (d *demo) audit(ctx context.Context) (string, error) {
	out, code, err := d.agentbox(ctx, "audit", "verify")
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("agentbox audit verify exited %d: %s", code, out)
	}
	return strings.TrimSpace(out), nil
}
