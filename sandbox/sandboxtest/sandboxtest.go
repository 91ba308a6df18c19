// Package sandboxtest is the conformance suite every sandbox.Runner
// backend must pass, and the one shared in-process test double (Fake).
// A backend's tests call Run with a factory; the suite checks the contract
// of package sandbox (exit codes, streams, stdin, workdir and final cwd,
// scrubbed environment, timeouts and cancellation, output capping, Close)
// and, unless the backend is run WithoutIsolation, what only real
// isolation gives (needsIsolation: one fresh environment per command, a
// read-only workspace that refuses writes, a read-only root, no network,
// never uid 0).
//
// The suite runs against Fake in plain `go test` and against every real
// backend (docker, docker with runsc, podman) in the integration tests.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Factory returns a new Runner over a new, empty workspace directory
// (its real absolute path) that the Runner's commands may write. The
// factory registers its own cleanup; the suite may Close the Runner.
type Factory func(t *testing.T) (r sandbox.Runner, workspace string)

// Option changes how Run treats a backend.
type Option func(*options)

type options struct {
	noIsolation bool
	skip        map[string]string
}

// WithoutIsolation skips the cases in needsIsolation, for runners that
// run commands on the host (Fake).
func WithoutIsolation() Option { return func(o *options) { o.noIsolation = true } }

// Skip skips the named case for this backend, giving the reason (a known
// gap the backend documents). Unknown names fail the run.
func Skip(name, reason string) Option {
	return func(o *options) {
		if o.skip == nil {
			o.skip = map[string]string{}
		}
		o.skip[name] = reason
	}
}

// needsIsolation is the per-backend list of the cases only a real sandbox
// can pass, each with the property it checks: a runner that runs commands
// on the host (WithoutIsolation) skips them with that property as the
// reason, so a skipped case says what the runner does not give.
var needsIsolation = map[string]string{
	"FreshEnvironment":  "a fresh environment per command (/tmp and HOME do not survive into the next command)",
	"FixedHome":         "the fixed HOME " + sandbox.Home + " inside the sandbox",
	"ReadOnlyWorkspace": "a read-only workspace mount for ReadOnly specs (the kernel refuses the write)",
	"ReadOnlyRoot":      "a read-only root file system",
	"NoNetwork":         "no network interface but loopback",
	"NotRoot":           "commands never run as uid 0",
}

// Run runs the whole suite. Cases share one Runner unless they need a
// fresh one.
func Run(t *testing.T, newRunner Factory, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	known := map[string]bool{"Close": true}
	for _, c := range cases {
		known[c.name] = true
	}
	for name := range o.skip {
		if !known[name] {
			t.Fatalf("sandboxtest.Skip(%q): no such case", name)
		}
	}
	for name := range needsIsolation {
		if !known[name] {
			t.Fatalf("sandboxtest.needsIsolation names %q: no such case", name)
		}
	}
	skip := func(t *testing.T, name string) {
		if reason, ok := o.skip[name]; ok {
			t.Skip(reason)
		}
		if property, ok := needsIsolation[name]; ok && o.noIsolation {
			t.Skipf("needs real isolation: %s; the runner under test runs commands on the host", property)
		}
	}
	r, ws := newRunner(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skip(t, c.name)
			c.fn(t, r, ws)
		})
	}
	t.Run("Close", func(t *testing.T) {
		skip(t, "Close")
		testClose(t, newRunner)
	})
}

type testCase struct {
	name string
	fn   func(t *testing.T, r sandbox.Runner, ws string)
}

var cases = []testCase{
	{"ArgvStdout", testArgvStdout},
	{"ExitCodes", testExitCodes},
	{"Stderr", testStderr},
	{"Stdin", testStdin},
	{"Workdir", testWorkdir},
	{"FinalCwd", testFinalCwd},
	{"Env", testEnv},
	{"WritesReachWorkspace", testWrites},
	{"FreshEnvironment", testFresh},
	{"Timeout", testTimeout},
	{"Cancel", testCancel},
	{"OutputCap", testOutputCap},
	{"OnOutput", testOnOutput},
	{"Signal", testSignal},
	{"NotFound", testNotFound},
	{"InvalidSpec", testInvalid},
	{"Concurrent", testConcurrent},
	{"Jobs", testJobs},
	{"WriteFile", testWriteFile},
	{"WriteGated", testWriteGated},
	{"WriteCanceled", testWriteCanceled},
	{"LargeStdin", testLargeStdin},
	{"FixedHome", testFixedHome},
	{"ReadOnlyWorkspace", testReadOnlyWorkspace},
	{"ReadOnlyRoot", testReadOnlyRoot},
	{"NoNetwork", testNoNetwork},
	{"NotRoot", testNotRoot},
}

func testFixedHome(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Shell: `printf %s "$HOME"`})
	if string(res.Stdout) != sandbox.Home {
		t.Errorf("HOME=%q, want %q", res.Stdout, sandbox.Home)
	}
}

func testReadOnlyWorkspace(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Shell: "echo x > ro-attempt.txt", ReadOnly: true})
	if res.ExitCode == 0 {
		t.Error("a write to the read-only workspace succeeded")
	}
	if !bytes.Contains(bytes.ToLower(res.Stderr), []byte("read-only")) {
		t.Errorf("stderr %q does not say read-only", res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, "ro-attempt.txt")); err == nil {
		t.Error("the file exists on the host")
	}
	res = mustRun(t, r, sandbox.Spec{Argv: []string{"ls", ws}, ReadOnly: true})
	if res.ExitCode != 0 {
		t.Errorf("reading the read-only workspace failed: exit %d %q", res.ExitCode, res.Stderr)
	}
}

func testReadOnlyRoot(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Shell: "echo x > /agentbox-root-write"})
	if res.ExitCode == 0 {
		t.Error("the root file system is writable")
	}
}

func testNoNetwork(t *testing.T, r sandbox.Runner, ws string) {
	// Every interface but loopback is a way out.
	res := mustRun(t, r, sandbox.Spec{Shell: "cat /proc/net/dev"})
	if res.ExitCode != 0 {
		t.Fatalf("cat /proc/net/dev: exit %d %q", res.ExitCode, res.Stderr)
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); ok && name != "lo" {
			t.Errorf("network interface %q present", name)
		}
	}
}

func testNotRoot(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"id", "-u"}})
	if strings.TrimSpace(string(res.Stdout)) == "0" || res.ExitCode != 0 {
		t.Errorf("id -u: %q exit %d, want a non-zero uid", res.Stdout, res.ExitCode)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// mustRun runs spec and fails the test on an error.
func mustRun(t *testing.T, r sandbox.Runner, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	res, err := r.Run(ctx(t), spec)
	if err != nil {
		t.Fatalf("Run(%q%q): %v (stderr %q)", spec.Argv, spec.Shell, err, res.Stderr)
	}
	return res
}

func testArgvStdout(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"echo", "hello", "a b"}})
	if string(res.Stdout) != "hello a b\n" || res.ExitCode != 0 {
		t.Fatalf("stdout %q exit %d, want %q 0", res.Stdout, res.ExitCode, "hello a b\n")
	}
	if res.StdoutDropped != 0 || res.Duration <= 0 {
		t.Errorf("dropped %d duration %v", res.StdoutDropped, res.Duration)
	}
}

func testExitCodes(t *testing.T, r sandbox.Runner, ws string) {
	for _, code := range []int{0, 1, 3, 42, 255} {
		res := mustRun(t, r, sandbox.Spec{Shell: fmt.Sprintf("exit %d", code)})
		if res.ExitCode != code || res.Signal != "" {
			t.Errorf("exit %d: got %d signal %q", code, res.ExitCode, res.Signal)
		}
	}
}

func testStderr(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Shell: "echo out; echo err >&2"})
	if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

func testStdin(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"cat"}, Stdin: []byte("line1\nline2")})
	if string(res.Stdout) != "line1\nline2" {
		t.Errorf("stdin echoed %q", res.Stdout)
	}
	// No stdin: reads see end of file at once.
	res = mustRun(t, r, sandbox.Spec{Argv: []string{"cat"}, Timeout: 20 * time.Second})
	if len(res.Stdout) != 0 || res.ExitCode != 0 || res.TimedOut {
		t.Errorf("cat without stdin: %q exit %d timed out %v", res.Stdout, res.ExitCode, res.TimedOut)
	}
}

func testWorkdir(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"pwd"}})
	if got := strings.TrimSpace(string(res.Stdout)); got != ws {
		t.Errorf("default workdir %q, want the workspace %q", got, ws)
	}
	mustRun(t, r, sandbox.Spec{Shell: "mkdir -p wd/sub"})
	res = mustRun(t, r, sandbox.Spec{Argv: []string{"pwd"}, Workdir: filepath.Join(ws, "wd", "sub")})
	if got := strings.TrimSpace(string(res.Stdout)); got != filepath.Join(ws, "wd", "sub") {
		t.Errorf("workdir %q", got)
	}
}

func testFinalCwd(t *testing.T, r sandbox.Runner, ws string) {
	mustRun(t, r, sandbox.Spec{Shell: "mkdir -p cwd/deeper"})
	res := mustRun(t, r, sandbox.Spec{Shell: "cd cwd/deeper && true"})
	if res.Cwd != filepath.Join(ws, "cwd", "deeper") {
		t.Errorf("final cwd %q, want %q", res.Cwd, filepath.Join(ws, "cwd", "deeper"))
	}
	res = mustRun(t, r, sandbox.Spec{Shell: "cd / ; exit 4"})
	if res.ExitCode != 4 {
		t.Errorf("exit %d, want 4 (the cwd report must not change it)", res.ExitCode)
	}
	if res.Cwd != ws {
		t.Errorf("cwd outside the workspace reported as %q, want the workdir %q", res.Cwd, ws)
	}
	res = mustRun(t, r, sandbox.Spec{Argv: []string{"true"}})
	if res.Cwd != ws {
		t.Errorf("argv cwd %q", res.Cwd)
	}
}

func testEnv(t *testing.T, r sandbox.Runner, ws string) {
	os.Setenv("AGENTBOX_SANDBOXTEST_SECRET", "leak")
	defer os.Unsetenv("AGENTBOX_SANDBOXTEST_SECRET")
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"env"}, Env: []string{"EXTRA=1", "TERM=xterm-override"}})
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	want := map[string]string{
		"PATH": sandbox.Path, "PAGER": "cat", "GIT_PAGER": "cat",
		"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "DEBIAN_FRONTEND": "noninteractive",
		"EXTRA": "1", "TERM": "xterm-override",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["AGENTBOX_SANDBOXTEST_SECRET"]; ok {
		t.Error("a host variable leaked into the environment")
	}
	res = mustRun(t, r, sandbox.Spec{Shell: `test -d "$HOME" && test -w "$HOME" && echo ok`})
	if strings.TrimSpace(string(res.Stdout)) != "ok" {
		t.Errorf("HOME is not a writable directory: %q %q", res.Stdout, res.Stderr)
	}
}

func testWrites(t *testing.T, r sandbox.Runner, ws string) {
	mustRun(t, r, sandbox.Spec{Shell: "printf 'from the sandbox' > written.txt"})
	b, err := os.ReadFile(filepath.Join(ws, "written.txt"))
	if err != nil || string(b) != "from the sandbox" {
		t.Fatalf("host sees %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "fromhost.txt"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"cat", filepath.Join(ws, "fromhost.txt")}})
	if string(res.Stdout) != "host" {
		t.Errorf("sandbox sees %q", res.Stdout)
	}
}

func testFresh(t *testing.T, r sandbox.Runner, ws string) {
	mustRun(t, r, sandbox.Spec{Shell: "echo x > /tmp/marker && echo y > $HOME/marker"})
	res := mustRun(t, r, sandbox.Spec{Shell: "test -e /tmp/marker || test -e $HOME/marker"})
	if res.ExitCode == 0 {
		t.Error("/tmp or HOME survived into the next command")
	}
}

func testTimeout(t *testing.T, r sandbox.Runner, ws string) {
	start := time.Now()
	res, err := r.Run(ctx(t), sandbox.Spec{Shell: "echo before; sleep 60", Timeout: time.Second})
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !res.TimedOut || !res.Killed || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v, want timed out, killed, 137 SIGKILL", res)
	}
	if string(res.Stdout) != "before\n" {
		t.Errorf("output before the timeout lost: %q", res.Stdout)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout of 1s took %v", d)
	}
}

func testCancel(t *testing.T, r sandbox.Runner, ws string) {
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	// Cancel once the command is running (not while a container starts).
	res, err := r.Run(c, sandbox.Spec{Shell: "echo up; sleep 60", OnOutput: func(sandbox.Stream, []byte) { cancel() }})
	if !errors.Is(err, sandbox.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrCanceled wrapping context.Canceled", err)
	}
	if !res.Killed || res.TimedOut {
		t.Errorf("result %+v, want killed, not timed out", res)
	}
}

func testOutputCap(t *testing.T, r sandbox.Runner, ws string) {
	const total = 1 << 20
	res := mustRun(t, r, sandbox.Spec{
		Shell:     fmt.Sprintf("echo HEAD; yes middle | head -c %d; echo; echo TAIL; echo err >&2", total),
		OutputCap: 4096,
	})
	if !bytes.HasPrefix(res.Stdout, []byte("HEAD\n")) || !bytes.HasSuffix(res.Stdout, []byte("TAIL\n")) {
		t.Errorf("capped output lost head or tail: %q ... %q", res.Stdout[:min(20, len(res.Stdout))], res.Stdout[max(0, len(res.Stdout)-20):])
	}
	kept := int64(len(res.Stdout)) - int64(len(fmt.Sprintf("\n[... %d bytes omitted ...]\n", res.StdoutDropped)))
	if kept != 4096 || res.StdoutDropped != int64(5+total+1+5)-4096 {
		t.Errorf("kept %d dropped %d", kept, res.StdoutDropped)
	}
	if string(res.Stderr) != "err\n" || res.StderrDropped != 0 {
		t.Errorf("stderr %q dropped %d", res.Stderr, res.StderrDropped)
	}
}

func testOnOutput(t *testing.T, r sandbox.Runner, ws string) {
	var mu sync.Mutex
	var out, errb bytes.Buffer
	mustRun(t, r, sandbox.Spec{
		Shell:     "for i in 1 2 3; do echo out$i; echo err$i >&2; done; yes | head -c 100000",
		OutputCap: 1024,
		OnOutput: func(s sandbox.Stream, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			if s == sandbox.Stderr {
				errb.Write(p)
			} else {
				out.Write(p)
			}
		},
	})
	if out.Len() != len("out1\nout2\nout3\n")+100000 || errb.String() != "err1\nerr2\nerr3\n" {
		t.Errorf("streamed %d bytes of stdout, stderr %q", out.Len(), errb.String())
	}
}

func testSignal(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"sh", "-c", "kill -TERM $$; sleep 5"}})
	if res.ExitCode != 128+15 || res.Signal != "SIGTERM" {
		t.Errorf("exit %d signal %q, want 143 SIGTERM", res.ExitCode, res.Signal)
	}
}

func testNotFound(t *testing.T, r sandbox.Runner, ws string) {
	res := mustRun(t, r, sandbox.Spec{Argv: []string{"no-such-command-xyz"}})
	if res.ExitCode != 127 {
		t.Errorf("exit %d, want 127", res.ExitCode)
	}
	res = mustRun(t, r, sandbox.Spec{Shell: "no-such-command-xyz"})
	if res.ExitCode != 127 || len(res.Stderr) == 0 {
		t.Errorf("shell: exit %d stderr %q, want 127 and a message", res.ExitCode, res.Stderr)
	}
}

func testInvalid(t *testing.T, r sandbox.Runner, ws string) {
	for name, spec := range map[string]sandbox.Spec{
		"none":            {},
		"both":            {Argv: []string{"true"}, Shell: "true"},
		"relative dir":    {Argv: []string{"true"}, Workdir: "sub"},
		"outside":         {Argv: []string{"true"}, Workdir: "/etc"},
		"dotdot":          {Argv: []string{"true"}, Workdir: ws + "/../"},
		"bad env":         {Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		"nul":             {Shell: "echo a\x00b"},
		"negative output": {Argv: []string{"true"}, OutputCap: -1},
	} {
		if _, err := r.Run(ctx(t), spec); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: err = %v, want ErrInvalidSpec", name, err)
		}
	}
}

func testConcurrent(t *testing.T, r sandbox.Runner, ws string) {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Run(ctx(t), sandbox.Spec{Shell: fmt.Sprintf("echo %d", i)})
			if err != nil || strings.TrimSpace(string(res.Stdout)) != fmt.Sprint(i) {
				t.Errorf("run %d: %q %v", i, res.Stdout, err)
			}
		}()
	}
	wg.Wait()
}

func testJobs(t *testing.T, r sandbox.Runner, ws string) {
	jobs := sandbox.NewJobs(r)
	defer jobs.Close(context.Background())
	id, err := jobs.Start(ctx(t), sandbox.Spec{Shell: "echo started; sleep 1; echo finished"})
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	deadline := time.Now().Add(60 * time.Second)
	for {
		o, err := jobs.Output(id)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(o.Stdout)
		if o.Done {
			if o.Result == nil || o.Result.ExitCode != 0 || o.Err != nil {
				t.Fatalf("done with %+v %v", o.Result, o.Err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job never finished")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if all.String() != "started\nfinished\n" {
		t.Errorf("job output %q", all.String())
	}
	id, err = jobs.Start(ctx(t), sandbox.Spec{Shell: "echo up; sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	for seen := false; !seen; time.Sleep(50 * time.Millisecond) {
		o, _ := jobs.Output(id)
		seen = len(o.Stdout) > 0
		if time.Now().After(deadline) {
			t.Fatal("job never started")
		}
	}
	if err := jobs.Kill(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	o, _ := jobs.Output(id)
	if !o.Done || !errors.Is(o.Err, sandbox.ErrCanceled) || !o.Result.Killed {
		t.Errorf("killed job: done %v err %v", o.Done, o.Err)
	}
	if _, err := jobs.Output("job-nope"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
	if n := len(jobs.List()); n != 2 {
		t.Errorf("List has %d jobs, want 2", n)
	}
}

func testClose(t *testing.T, newRunner Factory) {
	r, _ := newRunner(t)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Run(c, sandbox.Spec{Shell: "sleep 60"})
		errc <- err
	}()
	time.Sleep(time.Second)
	if err := r.Close(ctx(t)); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("a command running at Close finished normally")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close left a command running")
	}
	if _, err := r.Run(ctx(t), sandbox.Spec{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}
