package main

import (
	"bytes"
	"encoding/json"
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
