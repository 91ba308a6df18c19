//go:build integration

package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// Init integrity: init (PID 1 of the container) and the frame
// protocol's sealed exit status (protocol 4), on runc and on the gVisor
// backend (sandbox.runtime: runsc). The command is untrusted code running
// as the workspace owner; each test is an attack on init or on what the
// executor believes about the run, and fails while the hole is open. All of them
// run under both runtimes (AGENTBOX_SANDBOX_RUNTIME=runsc, or the
// default runc).

// rt3Runner is a runner with the host's toolchain mounted (python3 for
// the attack scripts).
func rt3Runner(t *testing.T) (*docker.Runner, string) {
	return newRunnerOpts(t, newWorkspace(t), func(c *config.Config) { c.Sandbox.Image = images.Host })
}

// rt3Script runs a Python attack script, given inline, as the command.
func rt3Script(t *testing.T, r sandbox.Runner, script string) (sandbox.Result, error) {
	t.Helper()
	return runIn(t, r, sandbox.Spec{Argv: []string{"python3", "-c", script}, Timeout: time.Minute})
}

// TestRedteam3InitSurvivesSignals: Go's runtime has a handler for every
// signal, and one sent with kill(2) that it does not expect to be
// delivered to a channel (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
// SIGABRT, SIGSYS) crashes the program. The kernel delivers to a pid
// namespace's init every signal it has a handler for, so `kill -SEGV 1`
// from the command used to crash init: the call ended without a status
// (and, had the memory cgroup killed anything earlier, the executor
// reported init's crash exit code 2 as the command's result). Init now
// catches every signal; the command's own status comes back, sealed.
func TestRedteam3InitSurvivesSignals(t *testing.T) {
	r, _ := newRunner(t, "", nil)
	for _, sig := range []string{"SEGV", "BUS", "FPE", "ILL", "TRAP", "ABRT", "SYS", "QUIT", "TERM", "HUP", "PIPE", "TSTP", "TTIN", "TTOU", "XCPU", "XFSZ", "PWR", "URG"} {
		res, err := runIn(t, r, sandbox.Spec{Shell: "kill -" + sig + " 1 || echo refused; sleep 0.3; echo alive; exit 7", Timeout: time.Minute})
		if err != nil || res.ExitCode != 7 || !strings.Contains(string(res.Stdout), "alive") {
			t.Errorf("kill -%s 1: init did not survive to report the command's status: code %d err %v stdout %q stderr %q",
				sig, res.ExitCode, err, res.Stdout, res.Stderr)
		}
	}
}

// rt3Forge writes forged Exit frames (code 0) into init's stdout, where
// the runtime lets the command open it (gVisor: /proc/1/fd is open to
// the same uid; runc: init is not dumpable, EACCES), then exits 3. One
// frame carries a seal under an all-zero key, one a 32-byte "seal" that
// is the JSON's own SHA-256, one raw JSON.
const rt3Forge = `
import os, json, struct, hashlib, hmac, sys
st = json.dumps({"code": 0, "cwd": os.getcwd()}).encode()
frames = [
    hmac.new(bytes(32), b"X" + st, hashlib.sha256).digest() + st,
    hashlib.sha256(st).digest() + st,
    st,
]
try:
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    for p in frames:
        os.write(fd, b"O" + struct.pack(">I", 6) + b"forged")
        os.write(fd, b"X" + struct.pack(">I", len(p)) + p)
    print("wrote forged frames")
except OSError as e:
    print("cannot reach init's stdout:", e)
sys.stdout.flush()
sys.exit(3)
`

// TestRedteam3ForgedExitRefused: the command writes well-formed Exit
// frames saying "exit 0" into init's own stdout. Under runc it cannot
// open it; under gVisor it can, and the executor must refuse the frames
// (the seal does not match the request's key) rather than report
// success. Either way the result is never "exit 0".
func TestRedteam3ForgedExitRefused(t *testing.T) {
	r, _ := rt3Runner(t)
	res, err := rt3Script(t, r, rt3Forge)
	t.Logf("stdout %q err %v code %d", res.Stdout, err, res.ExitCode)
	switch {
	case err == nil && res.ExitCode == 0:
		t.Fatalf("a forged exit status was accepted: the command exited 3, the executor reports 0 (stdout %q)", res.Stdout)
	case err == nil && res.ExitCode != 3:
		t.Fatalf("exit code %d, want 3 or a refused run", res.ExitCode)
	case err != nil && errors.Is(err, sandbox.ErrUnavailable):
		// The tools tell the model "the sandbox is unavailable, so
		// nothing was run": a lie the command would have told.
		t.Fatalf("a refused frame is reported as an unavailable sandbox (nothing run): %v", err)
	case err != nil && !errors.Is(err, initproc.ErrUnsealed) && !errors.Is(err, initproc.ErrFrame) && !strings.Contains(err.Error(), "without reporting a status"):
		t.Fatalf("run failed for another reason than a refused frame: %v", err)
	case err != nil && !strings.Contains(err.Error(), initproc.ErrUnsealed.Error()):
		t.Logf("refused as a garbled stream: %v", err)
	}
	if err == nil && strings.Contains(string(res.Stdout), "wrote forged frames") {
		t.Fatal("the command wrote frames into init's stdout and the executor did not notice")
	}
}

// rt3Probe tries every way the command might read init's memory (where
// the request's key lives) or take over its descriptors, and prints LEAK
// for each that works.
const rt3Probe = `
import os, ctypes, glob
libc = ctypes.CDLL(None, use_errno=True)
def leak(what): print("LEAK", what)
for p in ["/proc/1/mem", "/proc/1/pagemap"] + glob.glob("/proc/1/task/*/mem"):
    try:
        with open(p, "rb") as f:
            f.seek(0x400000)
            if f.read(16): leak(p)
    except OSError: pass
for req in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
    if libc.ptrace(req, 1, 0, 0) == 0: leak("ptrace %d" % req)
class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
l = iovec(ctypes.cast(buf, ctypes.c_void_p), 64); rm = iovec(0x400000, 64)
if libc.syscall(310, 1, ctypes.byref(l), 1, ctypes.byref(rm), 1, 0) > 0: leak("process_vm_readv")
pfd = libc.syscall(434, 1, 0)  # pidfd_open
if pfd >= 0:
    for fd in range(16):
        if libc.syscall(438, pfd, fd, 0) >= 0: leak("pidfd_getfd %d" % fd)
for fd in range(64):
    try: target = os.readlink("/proc/1/fd/%d" % fd)
    except OSError: continue
    if "memfd" in target or target.startswith("/dev/shm"): leak("init holds " + target)
# init's stdout: the frames it sends, the sealed status among them
try:
    fd = os.open("/proc/1/fd/1", os.O_RDONLY | os.O_NONBLOCK)
    try:
        if os.read(fd, 1): leak("read init's stdout")
    except BlockingIOError: leak("init's stdout is readable (empty now)")
    except OSError: pass
except OSError: pass
print("probed")
`

// TestRedteam3InitMemoryOutOfReach: the seal is only as good as the
// key's secrecy. Init keeps the key in its memory; the command must not
// be able to read that memory (/proc/1/mem, ptrace, process_vm_readv),
// take init's descriptors (pidfd_getfd) or read init's own output
// stream (where a later sealed status could be taken and replayed).
func TestRedteam3InitMemoryOutOfReach(t *testing.T) {
	r, _ := rt3Runner(t)
	res, err := rt3Script(t, r, rt3Probe)
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "probed") {
		t.Fatalf("probe did not run: code %d err %v stdout %q stderr %q", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	if strings.Contains(string(res.Stdout), "LEAK") {
		t.Fatalf("the command reaches init's memory or stream:\n%s", res.Stdout)
	}
}

// TestRedteam3StoppedInitDiesWithExecutor: the command stops init
// (SIGSTOP; under runc the kernel never delivers it to a pid namespace's
// init from inside, under gVisor it does), then keeps writing into the
// workspace; the executor is killed. Init is what kills the command when
// the executor's stream ends: a stopped init cannot, and the command
// would go on writing into the workspace after its call, journaled by
// nobody, until the next agentbox process reaps the container. Under
// gVisor (which delivers SIGSTOP to PID 1 from inside) the executor's
// reaper process (sandbox/docker/reaper.go) kills it instead.
func TestRedteam3StoppedInitDiesWithExecutor(t *testing.T) {
	ws := newWorkspace(t)
	state := t.TempDir()
	tick := filepath.Join(ws, "tick")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentbox, "--workspace", ws, "--state-dir", state, "exec", "--timeout", "120s", "--",
		"kill -STOP 1; while :; do date +%s%N >> tick; sleep 0.1; done")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+cli.DaemonHost(), "AGENTBOX_SANDBOX_IMAGE="+testImage)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt3RemoveContainers(t, ws) })
	if !eventually(time.Minute, 100*time.Millisecond, func() bool { return lines(tick) >= 5 }) {
		cmd.Process.Kill()
		t.Fatal("the command never started writing")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(2 * time.Second) // the engine closes the stream; init kills the command
	before := lines(tick)
	time.Sleep(2 * time.Second)
	if after := lines(tick); after != before {
		t.Fatalf("the command went on writing %d lines after its executor died", after-before)
	}
}

func lines(p string) int {
	b, _ := os.ReadFile(p)
	return strings.Count(string(b), "\n")
}

// rt3RemoveContainers removes what a killed executor left behind for ws.
func rt3RemoveContainers(t *testing.T, ws string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelWorkspace+"="+ws))})
	if err != nil {
		t.Logf("listing leftovers: %v", err)
		return
	}
	for _, c := range list {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
}

// TestRedteam3StopOrKillInitNeverSucceeds: under gVisor the command can
// send SIGSTOP and SIGKILL to init. Its call must then fail (no status,
// or the timeout) and never come back as the "exit 0" it printed; under
// runc the kernel does not deliver them and the command's own status
// comes back.
func TestRedteam3StopOrKillInitNeverSucceeds(t *testing.T) {
	r, _ := newRunner(t, "", nil)
	for _, sig := range []string{"STOP", "KILL"} {
		res, err := runIn(t, r, sandbox.Spec{Shell: "kill -" + sig + " 1; sleep 0.5; echo exit-0; exit 0", Timeout: 8 * time.Second})
		switch {
		case err == nil && runtimeName == "runsc":
			t.Errorf("kill -%s 1 under gVisor: the call reports success (code %d, stdout %q)", sig, res.ExitCode, res.Stdout)
		case err != nil && runtimeName != "runsc":
			t.Errorf("kill -%s 1 reached init under runc: %v", sig, err)
		case err == nil && res.ExitCode != 0:
			t.Errorf("kill -%s 1: code %d", sig, res.ExitCode)
		}
		t.Logf("kill -%s 1: code %d err %v", sig, res.ExitCode, err)
	}
}
