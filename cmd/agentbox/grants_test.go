package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/shell"
)

// grantsFixture is an empty workspace with its own state and no engine:
// auto-start is off, so nothing is started by a unit test.
func grantsFixture(t *testing.T) (ws string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "my ws") // a blank: the printed command must quote it
	must(t, os.Mkdir(ws, 0o755))
	t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(base, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("AGENTBOX_ENGINE_AUTO_START", "false")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(base, "no-engine.sock"))
	return ws
}

func listGrants(t *testing.T, ws string) []grantJSON {
	t.Helper()
	out, stderr, err := runCLI(t, "--workspace", ws, "grants", "list", "--json")
	if err != nil {
		t.Fatalf("grants list: %v %s", err, stderr)
	}
	var rows []grantJSON
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("grants list --json %q: %v", out, err)
	}
	return rows
}

// TestRefusalGrantCommandWorks runs the grant command a refusal names,
// verbatim as a shell would split it, then lists and revokes the grant.
func TestRefusalGrantCommandWorks(t *testing.T) {
	ws := grantsFixture(t)
	_, stderr, err := runCLI(t, "--workspace", ws, "tool", "Bash", `{"command":"npm test -- --watch=false"}`)
	if err == nil || !strings.Contains(stderr, "needs_approval") {
		t.Fatalf("a dangerous command without a terminal ran or failed otherwise: %v %s", err, stderr)
	}
	for _, want := range []string{"--yes", "tools.allow", "--mode bypassPermissions", "Bash(npm test:*)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "They said") || strings.Contains(stderr, "wrote:") {
		t.Errorf("refusal quotes a person where none spoke:\n%s", stderr)
	}
	m := regexp.MustCompile("`(agentbox [^`]*grants add [^`]*)`").FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("refusal names no grant command:\n%s", stderr)
	}
	words, err := shell.Fields(m[1], nil)
	if err != nil {
		t.Fatalf("%q: %v", m[1], err)
	}
	if _, stderr, err := runCLI(t, words[1:]...); err != nil {
		t.Fatalf("the named command %q failed: %v %s", m[1], err, stderr)
	}
	// Adding it twice keeps one grant with the same id.
	if _, stderr, err := runCLI(t, words[1:]...); err != nil {
		t.Fatalf("second add: %v %s", err, stderr)
	}
	rows := listGrants(t, ws)
	if len(rows) != 1 || rows[0].Rule != "Bash(npm test:*)" || rows[0].Scope != "project" || strings.Join(rows[0].Prefix, " ") != "npm test" {
		t.Fatalf("grants after add: %+v", rows)
	}
	if again := listGrants(t, ws); again[0].ID != rows[0].ID {
		t.Fatalf("id not stable: %s then %s", rows[0].ID, again[0].ID)
	}
	// Now the same call is no longer a question.
	_, stderr, _ = runCLI(t, "--workspace", ws, "tool", "Bash", `{"command":"npm test -- --watch=false"}`)
	if strings.Contains(stderr, "needs_approval") {
		t.Fatalf("the granted call still needs approval:\n%s", stderr)
	}
	if _, stderr, err := runCLI(t, "--workspace", ws, "grants", "revoke", rows[0].ID); err != nil {
		t.Fatalf("revoke: %v %s", err, stderr)
	}
	if rows := listGrants(t, ws); len(rows) != 0 {
		t.Fatalf("grants after revoke: %+v", rows)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "grants", "revoke", rows[0].ID); err == nil {
		t.Fatal("revoking an unknown id succeeded")
	}
}

// TestRefusalGrantsEveryPart: the refusal of a compound command names one
// grant command with a rule per part not allowed yet; run verbatim, it
// grants them all and the same command no longer asks.
func TestRefusalGrantsEveryPart(t *testing.T) {
	ws := grantsFixture(t)
	in := `{"command":"make -j2 2>&1 | tail -3 && npm test"}`
	_, stderr, err := runCLI(t, "--workspace", ws, "tool", "Bash", in)
	if err == nil || !strings.Contains(stderr, "needs_approval") {
		t.Fatalf("a dangerous command without a terminal ran or failed otherwise: %v %s", err, stderr)
	}
	m := regexp.MustCompile("`(agentbox [^`]*grants add [^`]*)`").FindStringSubmatch(stderr)
	if m == nil || !strings.Contains(m[1], "'Bash(make:*)' 'Bash(npm test:*)'") {
		t.Fatalf("refusal names no grant command for both parts:\n%s", stderr)
	}
	words, err := shell.Fields(m[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := runCLI(t, words[1:]...); err != nil || strings.Count(out, "project Bash(") != 2 {
		t.Fatalf("the named command %q: %v %s %s", m[1], err, out, stderr)
	}
	if _, stderr, _ = runCLI(t, "--workspace", ws, "tool", "Bash", in); strings.Contains(stderr, "needs_approval") {
		t.Fatalf("the granted command still needs approval:\n%s", stderr)
	}
	// A bad rule among good ones grants none of them.
	if _, _, err := runCLI(t, "--workspace", ws, "grants", "add", "Bash(go test:*)", "Bash"); err == nil {
		t.Fatal("grants add with a bad rule succeeded")
	}
	if rows := listGrants(t, ws); len(rows) != 2 {
		t.Fatalf("grants after a refused add: %+v", rows)
	}
}

func TestGrantsSessionAndAll(t *testing.T) {
	ws := grantsFixture(t)
	steps := [][]string{
		{"grants", "add", "Bash(go test:*)", "--session", "s1"},
		{"grants", "add", "Bash(go test:*)", "--session", "s2"},
		{"grants", "add", "Write"},
	}
	for _, s := range steps {
		if _, stderr, err := runCLI(t, append([]string{"--workspace", ws}, s...)...); err != nil {
			t.Fatalf("%v: %v %s", s, err, stderr)
		}
	}
	rows := listGrants(t, ws)
	if len(rows) != 3 || rows[0].Scope != "project" || rows[1].Session != "s1" || rows[2].Session != "s2" || rows[1].ID == rows[2].ID {
		t.Fatalf("rows %+v", rows)
	}
	out, _, err := runCLI(t, "--workspace", ws, "grants", "revoke", rows[1].ID)
	if err != nil || !strings.Contains(out, rows[1].ID) {
		t.Fatalf("revoke session grant: %v %q", err, out)
	}
	if rows := listGrants(t, ws); len(rows) != 2 || rows[1].Session != "s2" {
		t.Fatalf("after revoking s1's grant: %+v", rows)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "grants", "revoke", "--all"); err != nil {
		t.Fatal(err)
	}
	if rows := listGrants(t, ws); len(rows) != 0 {
		t.Fatalf("after --all: %+v", rows)
	}
}

func TestGrantsAddRefuses(t *testing.T) {
	ws := grantsFixture(t)
	for _, rule := range []string{"Bash", "Bash(npm test)", "Bash(*:*)", "Edit(./src/**)", "Bash(", ""} {
		if _, _, err := runCLI(t, "--workspace", ws, "grants", "add", rule); err == nil {
			t.Errorf("grants add %q succeeded", rule)
		}
	}
	if rows := listGrants(t, ws); len(rows) != 0 {
		t.Fatalf("refused adds left grants: %+v", rows)
	}
}

func TestModeFlag(t *testing.T) {
	ws := grantsFixture(t)
	out, stderr, err := runCLI(t, "--workspace", ws, "--mode", "plan", "config", "show", "--json")
	if err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if !strings.Contains(out, `"plan"`) {
		t.Fatalf("--mode plan not in effect:\n%s", out)
	}
	if _, _, err := runCLI(t, "--workspace", ws, "--mode", "sometimes", "config", "show"); err == nil {
		t.Fatal("a bad --mode was accepted")
	}
	// plan refuses a write through the whole pipeline.
	_, stderr, err = runCLI(t, "--workspace", ws, "--mode", "plan", "tool", "Write", `{"file_path":"x.txt","content":"x"}`)
	if err == nil || !strings.Contains(stderr, "plan mode") {
		t.Fatalf("write in plan mode: %v %s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
		t.Fatal("plan mode wrote")
	}
}

func TestEngineUnit(t *testing.T) {
	grantsFixture(t)
	out, _, err := runCLI(t, "engine", "unit")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Service]", "engine start\n", "engine stop\n", "AGENTBOX_STATE_DIR=", "WantedBy=multi-user.target"} {
		if !strings.Contains(out, want) {
			t.Errorf("unit lacks %q:\n%s", want, out)
		}
	}
	if got := systemdEscape(`/a b/100%`); got != `"/a b/100%%"` {
		t.Errorf("systemdEscape = %s", got)
	}
}
