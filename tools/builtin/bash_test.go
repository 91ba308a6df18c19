package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/tools"
)

func TestExitExplanation(t *testing.T) {
	tests := []struct {
		prog     string
		code     int
		timedOut bool
		has      string
		benign   bool
	}{
		{"grep", 1, false, "no lines matched", true},
		{"/usr/bin/rg", 1, false, "no lines matched", true},
		{"grep", 2, false, "an error", false},
		{"diff", 1, false, "inputs differ", true},
		{"test", 1, false, "condition is false", true},
		{"make", 2, false, "used wrongly", false},
		{"timeout", 124, false, "timed out", false},
		{"x", 126, false, "could not be executed", false},
		{"nosuch", 127, false, "not found", false},
		{"go", 137, false, "killed (SIGKILL)", false},
		{"./a.out", 139, false, "segmentation fault", false},
		{"yes", 141, false, "SIGPIPE", true},
		{"sleep", 143, false, "SIGTERM", false},
		{"x", 129, false, "signal 1", false},
		{"sleep", 137, true, "ran out of time", false},
		{"cc", 1, false, "", false},
		{"true", 0, false, "", true},
	}
	for _, tt := range tests {
		text, benign := exitExplanation(tt.prog, tt.code, tt.timedOut, false)
		if !strings.Contains(text, tt.has) || (tt.has == "" && text != "") || benign != tt.benign {
			t.Errorf("%s %d: %q benign=%v, want %q benign=%v", tt.prog, tt.code, text, benign, tt.has, tt.benign)
		}
	}
}

func TestLastProgram(t *testing.T) {
	tests := []struct {
		cmds [][]string
		want string
	}{
		{[][]string{{"cat", "f"}, {"grep", "x"}}, "grep"},
		{[][]string{{"sudo", "-n", "diff", "a", "b"}}, "diff"},
		{[][]string{{"env", "A=1", "rg", "x"}}, "rg"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := lastProgram(tt.cmds); got != tt.want {
			t.Errorf("lastProgram(%v) = %q, want %q", tt.cmds, got, tt.want)
		}
	}
	for cmd, want := range map[string]string{"cd x && grep -q y z": "grep", "A=1 make": "make", "ls | wc -l": "wc", "": ""} {
		if got := guessProgram(cmd); got != want {
			t.Errorf("guessProgram(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func TestBashRunsAndKeepsCwd(t *testing.T) {
	env := newEnv(t)
	ws := env.Workspace
	must(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	r := run(t, Bash, env, `{"command":"cd sub && echo in; echo err >&2","description":"Go to sub"}`)
	if r.Err != nil || r.Content != "in\nerr\nWorking directory is now "+ws+"/sub." {
		t.Fatalf("%v %q", r.Err, r.Content)
	}
	if env.Session.Cwd() != filepath.Join(ws, "sub") {
		t.Fatalf("cwd %s", env.Session.Cwd())
	}
	r = run(t, Bash, env, `{"command":"pwd"}`)
	if strings.TrimSpace(strings.Split(r.Content, "\n")[0]) != filepath.Join(ws, "sub") {
		t.Fatalf("cwd not kept: %q", r.Content)
	}
	// Leaving the workspace is not kept: the runner reports no directory
	// outside it, and Bash refuses one a runner did report.
	r = run(t, Bash, env, `{"command":"cd /tmp"}`)
	if env.Session.Cwd() != filepath.Join(ws, "sub") || strings.Contains(r.Content, "Working directory is now") {
		t.Fatalf("cwd %s, content %q", env.Session.Cwd(), r.Content)
	}
	fake := env.Sandbox
	env.Sandbox = &scriptedSandbox{res: tools.ExecResult{Dir: "/tmp"}}
	r = run(t, Bash, env, `{"command":"cd /tmp"}`)
	if env.Session.Cwd() != filepath.Join(ws, "sub") || !strings.Contains(r.Content, "outside the workspace") {
		t.Fatalf("cwd %s, content %q", env.Session.Cwd(), r.Content)
	}
	env.Sandbox = fake
	// grep's 1 is no error; a real failure is, with its explanation.
	r = run(t, Bash, env, `{"command":"echo a | grep b"}`)
	if r.Err != nil || !strings.Contains(r.Content, "(no output)\n\nExit code 1: exit code 1 from grep means no lines matched") {
		t.Fatalf("grep: %v %q", r.Err, r.Content)
	}
	r = run(t, Bash, env, `{"command":"no-such-command-xyz"}`)
	if errKind(r) != tools.ErrExecution || !strings.Contains(r.Content, "Exit code 127: exit code 127 means the command was not found") {
		t.Fatalf("127: %v %q", r.Err, r.Content)
	}
	r = run(t, Bash, env, `{"command":"sleep 5","timeout":200}`)
	if errKind(r) != tools.ErrTimeout {
		t.Fatalf("timeout: %v %q", r.Err, r.Content)
	}
}

func TestBashScripted(t *testing.T) {
	env := newEnv(t)
	sb := &scriptedSandbox{res: tools.ExecResult{ExitCode: 0, Stdout: "head\n[... 5000 bytes omitted ...]\ntail\n", StdoutDropped: 5000, Duration: time.Millisecond}}
	env.Sandbox = sb
	env.Verdict = &tools.Verdict{Class: tools.ClassReadOnly, Commands: [][]string{{"cat", "big"}}}
	r := run(t, Bash, env, `{"command":"cat big","timeout":1000}`)
	if r.Content != "head\n[... 5000 bytes omitted ...]\ntail" || r.Meta["output_dropped_bytes"] != int64(5000) {
		t.Errorf("content %q meta %v", r.Content, r.Meta)
	}
	if sb.req.Timeout != time.Second || sb.req.Dir != env.Workspace || sb.req.Command != "cat big" || sb.req.Call != env.CallID {
		t.Errorf("request %+v", sb.req)
	}
	// The timeout is capped by the limits.
	env.Limits.MaxTimeout = 100 * time.Millisecond
	run(t, Bash, env, `{"command":"x","timeout":600000}`)
	if sb.req.Timeout != 100*time.Millisecond {
		t.Errorf("timeout %v", sb.req.Timeout)
	}
	for in, msg := range map[string]string{
		`{"command":"  "}`:                         "command is empty",
		`{"command":"x","timeout":600001}`:         "timeout must be",
		`{"command":"x","timeout":-1}`:             "timeout must be",
		`{"bash_id":"","filter":"x"}`:              "",
		`{"command":"x","run_in_background":true}`: "not available",
	} {
		if strings.Contains(in, "bash_id") {
			continue
		}
		env.Jobs = nil
		if r := run(t, Bash, env, in); r.Err == nil || !strings.Contains(r.Content, msg) {
			t.Errorf("%s: %v %q", in, r.Err, r.Content)
		}
	}
	env.Sandbox = nil
	if r := run(t, Bash, env, `{"command":"ls"}`); errKind(r) != tools.ErrInternal {
		t.Errorf("no sandbox: %v", r.Err)
	}
}

// TestBashTimeout pins the timeout a call gets (config.ClampTimeout with
// the call's limits, unset limits standing for config's) and that a
// timed-out call names it.
func TestBashTimeout(t *testing.T) {
	tests := []struct {
		name     string
		limits   tools.Limits
		input    string
		want     time.Duration
		wantText string
	}{
		{"default", tools.Limits{DefaultTimeout: time.Minute, MaxTimeout: 5 * time.Minute}, `{"command":"x"}`, time.Minute, "after 1m0s"},
		{"requested", tools.Limits{DefaultTimeout: time.Minute, MaxTimeout: 5 * time.Minute}, `{"command":"x","timeout":1500}`, 1500 * time.Millisecond, "after 1.5s"},
		{"capped", tools.Limits{DefaultTimeout: time.Minute, MaxTimeout: 5 * time.Minute}, `{"command":"x","timeout":600000}`, 5 * time.Minute, "after 5m0s"},
		{"no limits: config's default", tools.Limits{}, `{"command":"x"}`, config.DefaultTimeout, "after 2m0s"},
		{"no limits: config's cap", tools.Limits{}, `{"command":"x","timeout":600000}`, config.MaxTimeout, "after 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			env.Limits = tt.limits
			sb := &scriptedSandbox{res: tools.ExecResult{ExitCode: 137, TimedOut: true}}
			env.Sandbox = sb
			r := run(t, Bash, env, tt.input)
			if sb.req.Timeout != tt.want {
				t.Errorf("timeout %v, want %v", sb.req.Timeout, tt.want)
			}
			if errKind(r) != tools.ErrTimeout || !strings.Contains(r.Err.Message, "timed out "+tt.wantText) {
				t.Errorf("error %v, want it to say %q", r.Err, tt.wantText)
			}
		})
	}
}

// captured is what the sandbox returns for a stream of n bytes ending in
// a newline, kept within limit: head and tail with the sandbox's own
// marker line between them when bytes were dropped.
func captured(n, limit int) (string, int64) {
	c := sandbox.NewCapture(limit)
	c.Write([]byte(strings.Repeat("x", n-1) + "\n"))
	return string(c.Bytes()), c.Dropped()
}

// TestBashOneNotePerCut: a stream the sandbox cut shows the model exactly
// one note of that cut (the sandbox's marker line), none for a stream it
// kept whole.
func TestBashOneNotePerCut(t *testing.T) {
	tests := []struct {
		name             string
		stdoutN, stderrN int
		want             int // notes in the content
	}{
		{"nothing cut", 100, 10, 0},
		{"stdout cut", 5000, 10, 1},
		{"stderr cut", 10, 5000, 1},
		{"both cut", 5000, 5000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			var res tools.ExecResult
			res.Stdout, res.StdoutDropped = captured(tt.stdoutN, 1024)
			res.Stderr, res.StderrDropped = captured(tt.stderrN, 1024)
			env.Sandbox = &scriptedSandbox{res: res}
			r := run(t, Bash, env, `{"command":"big"}`)
			if got := strings.Count(r.Content, "omitted"); got != tt.want {
				t.Errorf("%d notes, want %d:\n%s", got, tt.want, r.Content)
			}
		})
	}
}

// TestBashOutputFilterKeepsCutNote: a filtered read of a job's output
// still carries the sandbox's note where it cut that output, once.
func TestBashOutputFilterKeepsCutNote(t *testing.T) {
	env := newEnv(t)
	jobs := &fakeJobs{}
	env.Jobs = jobs
	id := run(t, Bash, env, `{"command":"make","run_in_background":true}`).Meta["bash_id"].(string)
	c := sandbox.NewCapture(64)
	c.Write([]byte("WARN first\n" + strings.Repeat("noise\n", 100) + "WARN last\n"))
	jobs.emit(id, string(c.Bytes()))
	r := run(t, BashOutput, env, `{"bash_id":"`+id+`","filter":"WARN"}`)
	want := fmt.Sprintf("Shell %s is running.\n\nWARN first\n[... %d bytes omitted ...]\nWARN last", id, c.Dropped())
	if r.Content != want {
		t.Errorf("content %q\nwant %q", r.Content, want)
	}
}

func TestBackgroundShells(t *testing.T) {
	env := newEnv(t)
	jobs := &fakeJobs{}
	env.Jobs = jobs
	r := run(t, Bash, env, `{"command":"npm run dev","run_in_background":true}`)
	if r.Err != nil || r.Meta["bash_id"] != "job-1" || !env.Session.HasJob("job-1") {
		t.Fatalf("start: %v %q %v", r.Err, r.Content, r.Meta)
	}
	jobs.emit("job-1", "ready on :3000\nWARN slow\nGET /\n")
	r = run(t, BashOutput, env, `{"bash_id":"job-1","filter":"WARN|GET"}`)
	if r.Content != "Shell job-1 is running.\n\nWARN slow\nGET /" {
		t.Errorf("output %q", r.Content)
	}
	r = run(t, BashOutput, env, `{"bash_id":"job-1"}`)
	if r.Content != "Shell job-1 is running.\n(no new output)" {
		t.Errorf("no new output %q", r.Content)
	}
	if r := run(t, BashOutput, env, `{"bash_id":"job-9"}`); errKind(r) != tools.ErrNotFound {
		t.Errorf("unknown id: %v", r.Err)
	}
	if r := run(t, BashOutput, env, `{"bash_id":"job-1","filter":"("}`); errKind(r) != tools.ErrValidation {
		t.Errorf("bad filter: %v", r.Err)
	}
	jobs.emit("job-1", "bye\n")
	r = run(t, KillShell, env, `{"shell_id":"job-1"}`)
	if r.Content != "Shell job-1 was killed.\n\nbye" || env.Session.HasJob("job-1") {
		t.Errorf("kill %q", r.Content)
	}
	if r := run(t, KillShell, env, `{"shell_id":"job-1"}`); errKind(r) != tools.ErrNotFound {
		t.Errorf("second kill: %v", r.Err)
	}
}

// TestBashMaxTimeoutText holds the literal maximum in BashParams' schema
// tags and in the texts the model reads to config.MaxTimeout.
func TestBashMaxTimeoutText(t *testing.T) {
	want := strconv.Itoa(maxBashTimeoutMS)
	f, _ := reflect.TypeFor[BashParams]().FieldByName("Timeout")
	texts := map[string]string{
		"maximum tag":    f.Tag.Get("maximum"),
		"jsonschema tag": f.Tag.Get("jsonschema"),
		"usage":          bashDescription.Usage,
	}
	text, _ := exitExplanation("x", 137, true, false)
	texts["timeout explanation"] = text
	res, _ := startBackground(context.Background(), &tools.Env{}, &BashParams{Command: "x", RunInBackground: true}, tools.ExecRequest{})
	texts["no-background refusal"] = res.Content
	for name, s := range texts {
		if !strings.Contains(s, want) {
			t.Errorf("%s does not name the maximum timeout %s ms: %q", name, want, s)
		}
	}
	if (&BashParams{Command: "x", Timeout: maxBashTimeoutMS}).Validate() != nil || (&BashParams{Command: "x", Timeout: maxBashTimeoutMS + 1}).Validate() == nil {
		t.Errorf("Validate does not cap at %d ms", maxBashTimeoutMS)
	}
}
