package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/classifier"
)

func TestClassifyJSONL(t *testing.T) {
	in := strings.Join([]string{
		`{"cmd": "ls -la"}`,
		`not json`,
		`{"cmd": 5}`,
		``,
		`{"other": "x"}`,
		`{"cmd": "r''m -rf /"}`,
		`{"cmd": "echo a\u0000b"}`,
	}, "\n") // no trailing newline on the last line
	var out bytes.Buffer
	if err := classifyJSONL(strings.NewReader(in), &out, classifier.WithTrustedGit(true)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []struct {
		cmd   string
		class classifier.Class
		rule  string
	}{
		{"ls -la", classifier.ReadOnly, ""},
		{"", classifier.Dangerous, "input.invalid"},
		{"", classifier.Dangerous, "input.invalid"},
		{"", classifier.Dangerous, "input.invalid"},
		{"", classifier.Dangerous, "input.invalid"},
		{"r''m -rf /", classifier.Forbidden, ""},
		{"echo a\x00b", classifier.Dangerous, "control_char"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		var r struct {
			Cmd      string              `json:"cmd"`
			Class    classifier.Class    `json:"class"`
			Reasons  []classifier.Reason `json:"reasons"`
			Commands [][]string          `json:"commands"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		if r.Cmd != want[i].cmd || r.Class != want[i].class || r.Reasons == nil || r.Commands == nil {
			t.Errorf("line %d = %s, want cmd %q class %s", i+1, l, want[i].cmd, want[i].class)
		}
		if want[i].rule != "" && (len(r.Reasons) == 0 || r.Reasons[0].Rule != want[i].rule) {
			t.Errorf("line %d reasons %+v, want rule %s", i+1, r.Reasons, want[i].rule)
		}
	}
}

func TestClassifyCommand(t *testing.T) {
	t.Setenv("AGENTBOX_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"classify", "git log | head"}, "read_only\n"},
		{[]string{"classify", "--json", "sort -o x y"}, `"class":"dangerous"`},
		{[]string{"--json", "classify", "sudo ls"}, `"class":"forbidden"`},
		{[]string{"classify", "--json", "ls -la"}, `"commands":[["ls","-la"]]`},
	} {
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"--workspace", t.TempDir()}, tt.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v (%s)", tt.args, err, errOut.String())
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v printed %q, want it to contain %q", tt.args, out.String(), tt.want)
		}
	}
}

// TestClassifySecrets: `agentbox classify` judges with the secret path
// rules of the configuration (tools.secrets): a read of a secret file by
// a glob or a substitution is dangerous with a reason naming the rule, and
// a user config that changes the list is followed.
func TestClassifySecrets(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must(t, os.Mkdir(ws, 0o755))
	t.Setenv("AGENTBOX_STATE_DIR", filepath.Join(base, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	for cmd, rule := range map[string]string{"cat .e*": "Read(.env*)", "cat -- *.pem": "Read(*.pem)", "cat $(ls -a | grep env)": "Read(", "xxd .env": "Read(.env*)"} {
		out, _, err := runCLI(t, "--workspace", ws, "classify", "--json", cmd)
		if err != nil {
			t.Fatal(err)
		}
		var v classifier.Verdict
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if v.Class != classifier.Dangerous || !slices.ContainsFunc(v.Reasons, func(r classifier.Reason) bool {
			return r.Rule == "read.secret" && strings.Contains(r.Message, rule)
		}) {
			t.Errorf("classify %q = %s %+v, want dangerous with read.secret naming %s", cmd, v.Class, v.Reasons, rule)
		}
	}
	// The operator's list is the one used.
	must(t, os.MkdirAll(filepath.Join(base, "config", "agentbox"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "config", "agentbox", "config.yaml"), []byte("tools:\n  secrets: [\"*.secret\"]\n"), 0o644))
	for cmd, want := range map[string]string{"cat .env": "read_only", "cat a.secret": "dangerous"} {
		out, _, err := runCLI(t, "--workspace", ws, "classify", cmd)
		if err != nil || !strings.HasPrefix(out, want) {
			t.Errorf("with tools.secrets [*.secret], classify %q = %q (%v), want %s", cmd, out, err, want)
		}
	}
	out, _, err := runCLI(t, "--workspace", ws, "config", "show")
	if err != nil || !strings.Contains(out, "secrets") || !strings.Contains(out, "*.secret") {
		t.Errorf("config show does not show tools.secrets: %v\n%s", err, out)
	}
}
