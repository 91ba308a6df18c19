//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// tree describes every entry under dir: type, mode, owner, content hash or
// link target.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v uid=%d", fi.Mode(), st.Uid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assertIntact fails when dir differs from before, except for the paths
// in allowed (relative), which may appear, change or vanish.
func assertIntact(t *testing.T, dir string, before map[string]string, allowed ...string) {
	t.Helper()
	after := tree(t, dir)
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for p, d := range before {
		if ok[p] {
			continue
		}
		if after[p] != d {
			t.Errorf("%s: %s changed to %q", dir, p, after[p])
		}
	}
	for p, d := range after {
		if _, was := before[p]; !was && !ok[p] {
			t.Errorf("%s: %s appeared (%s)", dir, p, d)
		}
	}
}

// escapeEnv is a workspace with content, a sibling directory outside it
// and a Runner over it.
type escapeEnv struct {
	r       *docker.Runner
	ws      string
	outside string
	wsTree  map[string]string
	outTree map[string]string
}

func newEscape(t *testing.T, mutate func(*config.Config)) *escapeEnv {
	t.Helper()
	ws := newWorkspace(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	must(t, os.Mkdir(outside, 0o777))
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside secret"), 0o666))
	must(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error { return os.Lchown(p, wsUID, wsGID) })
	r, _ := newRunner(t, ws, mutate)
	return &escapeEnv{r: r, ws: ws, outside: outside, wsTree: tree(t, ws), outTree: tree(t, outside)}
}

// intact checks the workspace (but the allowed paths) and the outside.
func (e *escapeEnv) intact(t *testing.T, allowed ...string) {
	t.Helper()
	assertIntact(t, e.ws, e.wsTree, allowed...)
	assertIntact(t, e.outside, e.outTree)
}

func (e *escapeEnv) sh(t *testing.T, script string, timeout time.Duration) (sandbox.Result, error) {
	t.Helper()
	return runIn(t, e.r, sandbox.Spec{Shell: script, Timeout: timeout})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEscapeWriteOutside(t *testing.T) {
	e := newEscape(t, nil)
	hostFile := filepath.Join(e.outside, "pwned")
	must(t, os.Symlink(e.outside, filepath.Join(e.ws, "out-link")))
	must(t, os.Lchown(filepath.Join(e.ws, "out-link"), wsUID, wsGID))
	must(t, os.Symlink(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.ws, "secret-link")))
	must(t, os.Lchown(filepath.Join(e.ws, "secret-link"), wsUID, wsGID))
	e.wsTree = tree(t, e.ws)
	script := strings.Join([]string{
		"echo pwned > ../outside/pwned", "echo pwned > ../pwned", "echo pwned > ../../pwned",
		"echo pwned > " + hostFile, "echo pwned >> " + filepath.Join(e.outside, "secret.txt"),
		"echo pwned > /etc/passwd", "echo pwned > /pwned", "mkdir -p /usr/pwned",
		"echo pwned > out-link/pwned", "echo pwned >> out-link/secret.txt", "echo pwned >> secret-link",
		"ln -s /etc/passwd pw && echo pwned >> pw",
		"ln -s ../outside lnk2 && echo pwned > lnk2/pwned",
		"cd .. && echo pwned > pwned-from-cd",
		"true",
	}, "; ")
	res, err := e.sh(t, script, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hostFile, filepath.Join(filepath.Dir(e.ws), "pwned"), filepath.Join(filepath.Dir(filepath.Dir(e.ws)), "pwned"), "/pwned", "/usr/pwned", filepath.Join(filepath.Dir(e.ws), "pwned-from-cd")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}
	if b, _ := os.ReadFile("/etc/passwd"); strings.Contains(string(b), "pwned") {
		t.Error("/etc/passwd written")
	}
	t.Logf("stderr: %s", res.Stderr)
	e.intact(t, "pw", "lnk2")
}

func TestEscapeReadSecrets(t *testing.T) {
	e := newEscape(t, nil)
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil {
		t.Fatalf("the host needs an /etc/shadow for this test: %v", err)
	}
	marker := filepath.Join("/root", fmt.Sprintf("agentbox-secret-%d", time.Now().UnixNano()))
	must(t, os.WriteFile(marker, []byte("root-only secret"), 0o600))
	defer os.Remove(marker)
	sock := strings.TrimPrefix(cli.DaemonHost(), "unix://")
	res, err := e.sh(t, fmt.Sprintf("cat /etc/shadow; cat %s; ls -la /root; ls -la %s /var/run/docker.sock /run/docker.sock; wget -q -O- --timeout 2 http://localhost/version; echo -e 'GET /version HTTP/1.0\\r\\n\\r\\n' | nc -w 2 local:%s; true", marker, sock, sock), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	for _, line := range strings.Split(strings.TrimSpace(string(shadow)), "\n") {
		if h, _, _ := strings.Cut(line, ":"); h != "" && strings.Contains(string(res.Stdout), line) {
			t.Errorf("shadow line of %s readable", h)
		}
	}
	if strings.Contains(out, "root-only secret") || strings.Contains(string(res.Stdout), filepath.Base(marker)) {
		t.Error("/root readable")
	}
	if strings.Contains(out, "ApiVersion") {
		t.Error("the engine answered from inside the sandbox")
	}
	if !strings.Contains(string(res.Stderr), sock) {
		t.Errorf("expected ls to fail on %s: %s", sock, res.Stderr)
	}
	e.intact(t)
}

func TestEscapeNetwork(t *testing.T) {
	e := newEscape(t, nil)
	ln, err := net.Listen("tcp", ":0")
	must(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Write([]byte("LISTENER-REACHED\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// Every address of this host, and loopback (which inside the
	// container is the container's own).
	targets := []string{"127.0.0.1"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			targets = append(targets, ip.IP.String())
		}
	}
	// Sanity: the listener is reachable from the host itself.
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second); err != nil {
		t.Fatalf("listener not reachable from the host: %v", err)
	} else {
		c.Close()
	}
	// Wait for the sanity connection to be counted, so that it cannot be
	// mistaken for one from the sandbox.
	if !eventually(10*time.Second, 5*time.Millisecond, func() bool { return accepted.Load() != 0 }) {
		t.Fatal("the listener never accepted the host's own connection")
	}
	before := accepted.Load()
	var script strings.Builder
	script.WriteString("ls /sys/class/net; echo ---; ")
	for _, ip := range targets {
		fmt.Fprintf(&script, "nc -w 2 %s %d </dev/null; ", ip, port)
	}
	script.WriteString("true")
	res, err := e.sh(t, script.String(), 60*time.Second)
	must(t, err)
	ifaces, _, _ := strings.Cut(string(res.Stdout), "---")
	if f := strings.Fields(ifaces); len(f) != 1 || f[0] != "lo" {
		t.Errorf("interfaces %q, want only lo", f)
	}
	if strings.Contains(string(res.Stdout), "LISTENER-REACHED") || accepted.Load() != before {
		t.Errorf("the sandbox reached the host's listener (targets %v)", targets)
	}
	e.intact(t)
}

// TestEscapeForgedStatus: the command writes well-formed exit frames
// (code 0; bare, and with a made-up seal) into every descriptor of init
// it can open, its stdout included, then exits 3. The executor must never
// take a forged status: under runc the kernel refuses /proc/1/fd (init
// is not dumpable); under gVisor the frames get through and fail the
// seal of the request's key (see sandbox/initproc).
func TestEscapeForgedStatus(t *testing.T) {
	e := newEscape(t, nil)
	res, err := e.sh(t, `forge() {
  printf 'X\000\000\000\024{"code":0,"cwd":"/"}'
  printf 'X\000\000\000\064'; head -c 32 /dev/zero; printf '{"code":0,"cwd":"/"}'
}
n=0
for f in /proc/1/fd/* /proc/1/task/*/fd/*; do
  case $f in */0) continue ;; esac
  (forge > "$f") 2>/dev/null && n=$((n+1))
done
echo "forged $n" >&2
for f in /proc/1/fd/0 /proc/1/task/*/fd/0; do (forge > "$f") 2>/dev/null; done
exit 3`, 30*time.Second)
	t.Logf("result: exit %d signal %q err %v stderr %q", res.ExitCode, res.Signal, err, res.Stderr)
	switch {
	case err != nil:
		// Refused: the seal did not match, or the stream was garbled.
		if !errors.Is(err, initproc.ErrUnsealed) && !errors.Is(err, initproc.ErrFrame) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("unexpected error: %v", err)
		}
	case res.ExitCode == 0:
		t.Fatalf("the executor took a forged status: %+v", res)
	case res.ExitCode != 3 && res.ExitCode != 137:
		// 137: a byte written into init's stdin kills the command.
		t.Errorf("exit %d, want 3 (or 137)", res.ExitCode)
	}
	if runtimeName != "runsc" && !strings.Contains(string(res.Stderr), "forged 0") {
		t.Errorf("the command opened init's descriptors: %q", res.Stderr)
	}
	e.intact(t)
}

func TestEscapeForkBomb(t *testing.T) {
	e := newEscape(t, func(c *config.Config) { c.Sandbox.PidsLimit = 64 })
	start := time.Now()
	res, err := e.sh(t, ":(){ :|:& };:", 5*time.Second)
	if err != nil && !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("fork bomb: %v", err)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("fork bomb took %v to contain", d)
	}
	t.Logf("fork bomb: exit %d timed out %v after %v", res.ExitCode, res.TimedOut, time.Since(start))
	// The next command runs normally.
	res, err = e.sh(t, "echo alive", 30*time.Second)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "alive" {
		t.Fatalf("after the fork bomb: %q %v", res.Stdout, err)
	}
	e.intact(t)
}

func TestEscapeMemoryBomb(t *testing.T) {
	e := newEscape(t, func(c *config.Config) { c.Sandbox.MemoryMB = 64 })
	res, err := e.sh(t, `awk 'BEGIN { s = "xxxxxxxxxxxxxxxx"; while (1) s = s s }'; echo "awk exit $?"`, 60*time.Second)
	if err != nil {
		t.Fatalf("memory bomb: %v", err)
	}
	if !res.OOMKilled {
		t.Errorf("OOM not reported: %+v stdout %q", res, res.Stdout)
	}
	if !strings.Contains(string(res.Stdout), "awk exit 137") {
		t.Errorf("awk was not SIGKILLed: %q", res.Stdout)
	}
	e.intact(t)
}

func TestEscapeFillDisk(t *testing.T) {
	e := newEscape(t, func(c *config.Config) { c.Sandbox.TmpSizeMB = 16; c.Sandbox.FileSizeMB = 8 })
	res, err := e.sh(t, "dd if=/dev/zero of=/tmp/fill bs=1M count=64; echo tmp=$?; dd if=/dev/zero of=big bs=1M count=64; echo ws=$?; ls -l big", 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	if strings.Contains(out, "tmp=0") || strings.Contains(out, "ws=0") {
		t.Errorf("a write past the limits succeeded: %s %s", out, res.Stderr)
	}
	fi, err := os.Stat(filepath.Join(e.ws, "big"))
	if err == nil && fi.Size() > 8<<20 {
		t.Errorf("workspace file grew to %d bytes past the 8 MiB fsize limit", fi.Size())
	}
	e.intact(t, "big")
}

func TestEscapeSetuid(t *testing.T) {
	e := newEscape(t, nil)
	// A setuid-root binary placed in the workspace (by the host's root):
	// running it in the sandbox must not grant root.
	bb, err := os.ReadFile("/usr/bin/busybox")
	must(t, err)
	suid := filepath.Join(e.ws, "suid-root")
	must(t, os.WriteFile(suid, bb, 0o755))
	must(t, os.Chmod(suid, 0o4755))
	e.wsTree = tree(t, e.ws)
	res, err := e.sh(t, "./suid-root id -u; ./suid-root id -u -r; cp /bin/busybox mine && chmod 6755 mine && ./mine id -u; chown 0:0 mine; echo chown=$?", 30*time.Second)
	must(t, err)
	lines := strings.Fields(string(res.Stdout))
	for _, l := range lines {
		if l == "0" {
			t.Errorf("gained uid 0: %q", res.Stdout)
		}
	}
	if !strings.Contains(string(res.Stdout), "chown=1") {
		t.Errorf("chown to root did not fail: %q %q", res.Stdout, res.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "mine")); err == nil {
		if st := fi.Sys().(*syscall.Stat_t); st.Uid == 0 || st.Gid == 0 {
			t.Errorf("the sandbox created a root-owned file: uid %d gid %d", st.Uid, st.Gid)
		}
	}
	e.intact(t, "mine")
}

func TestEscapeDeviceNodes(t *testing.T) {
	e := newEscape(t, nil)
	// Device nodes are refused everywhere: without CAP_MKNOD by the
	// kernel, and by the seccomp profile (gVisor's tmpfs does not check
	// the capability). FIFOs still work.
	res, err := e.sh(t, "mknod dev-null c 1 3; echo ws=$?; mknod /tmp/sda b 8 0; echo tmp=$?; mknod /tmp/tty c 5 0; echo tmpc=$?; mkfifo /tmp/fifo; echo fifo=$?; ls /dev", 30*time.Second)
	must(t, err)
	for _, want := range []string{"ws=1", "tmp=1", "tmpc=1", "fifo=0"} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("missing %s: %q %q", want, res.Stdout, res.Stderr)
		}
	}
	for _, d := range []string{"sda", "vda", "mem", "kmem", "port"} {
		if strings.Contains(" "+strings.Join(strings.Fields(string(res.Stdout)), " ")+" ", " "+d+" ") {
			t.Errorf("/dev/%s visible", d)
		}
	}
	e.intact(t)
}

func TestEscapeDaemonOutlives(t *testing.T) {
	e := newEscape(t, nil)
	res, err := e.sh(t, "(sleep 2; echo late > late1) & setsid sh -c 'sleep 2; echo late > late2' & nohup sh -c 'sleep 2; echo late > late3' >/dev/null 2>&1 & echo started", 30*time.Second)
	must(t, err)
	if d := res.Duration; d > 1900*time.Millisecond {
		t.Errorf("the command waited %v for its daemons", d)
	}
	if strings.TrimSpace(string(res.Stdout)) != "started" {
		t.Errorf("stdout %q", res.Stdout)
	}
	time.Sleep(4 * time.Second)
	e.intact(t) // late1..3 never appear
}

func TestEscapeInfiniteOutput(t *testing.T) {
	e := newEscape(t, nil)
	res, err := runIn(t, e.r, sandbox.Spec{Shell: "yes infinite", Timeout: 3 * time.Second, OutputCap: 64 << 10})
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if len(res.Stdout) > 64<<10+100 || res.StdoutDropped == 0 {
		t.Errorf("kept %d bytes, dropped %d", len(res.Stdout), res.StdoutDropped)
	}
	t.Logf("infinite output: kept %d, dropped %d bytes in 3s", len(res.Stdout), res.StdoutDropped)
	e.intact(t)
}

func TestEscapeIgnoresSIGTERM(t *testing.T) {
	e := newEscape(t, nil)
	start := time.Now()
	res, err := e.sh(t, "trap '' TERM; trap '' INT; trap '' HUP; echo ready; sleep 60; echo survived > survived", 2*time.Second)
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !res.TimedOut || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v", res)
	}
	if d := res.Duration; d > 10*time.Second {
		t.Errorf("a 2s timeout took %v (%v with the container start)", d, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The container is gone soon after.
	for {
		_, err := cli.ContainerInspect(ctx, res.ContainerID)
		if err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("container %s still there", res.ContainerID)
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.intact(t)
}

func TestEscapeProtectedPaths(t *testing.T) {
	e := newEscape(t, nil)
	res, err := e.sh(t, strings.Join([]string{
		"echo evil >> .git/config", "echo evil > .git/hooks/pre-commit", "chmod +x .git/hooks/pre-commit",
		"rm -rf .git/hooks", "mv .git/config .git/config.old", "mv .git/hooks .git/hooks.old",
		"rm -rf .git", "ln -sf /tmp/x .git/config", "echo ok > .git/HEAD2", "true",
	}, "; "), 30*time.Second)
	must(t, err)
	t.Logf("stderr: %s", res.Stderr)
	// Only unprotected .git entries may change.
	e.intact(t, ".git/HEAD", ".git/HEAD2")
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config is %q", b)
	}

	// A repository without hooks: a placeholder is created and protected.
	ws2 := newWorkspace(t)
	must(t, os.MkdirAll(filepath.Join(ws2, ".git"), 0o755))
	must(t, os.Chown(filepath.Join(ws2, ".git"), wsUID, wsGID))
	r2, _ := newRunner(t, ws2, nil)
	res, err = runIn(t, r2, sandbox.Spec{Shell: "mkdir -p .git/hooks; echo evil > .git/hooks/post-checkout; echo ok > .git/other", Timeout: 30 * time.Second})
	must(t, err)
	if _, err := os.Stat(filepath.Join(ws2, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("a hook was created in a repository that had no hooks directory")
	}
	if _, err := os.Stat(filepath.Join(ws2, ".git", "other")); err != nil {
		t.Errorf("unprotected .git/other not written: %v", err)
	}

	// A protected path that is a symlink is refused (fail closed).
	ws3 := newWorkspace(t)
	must(t, os.MkdirAll(filepath.Join(ws3, ".git"), 0o755))
	must(t, os.Symlink(e.outside, filepath.Join(ws3, ".git", "hooks")))
	cfg := testConfig(t, ws3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r3, err := docker.New(ctx, cli, cfg, nil); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		if err == nil {
			r3.Close(ctx)
		}
		t.Errorf("symlinked protected path: %v, want ErrUnsafeWorkspace", err)
	}
	// ... also when it appears after the runner started.
	must(t, os.Symlink(e.outside, filepath.Join(ws2, ".git", "config")))
	if _, err := runIn(t, r2, sandbox.Spec{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("protected path turned symlink: %v, want ErrUnsafeWorkspace", err)
	}
}

// TestEscapeExecutorKilled SIGKILLs an executor (this test binary
// re-executed) in the middle of a command: its container outlives it, and
// the next Runner to start on the same state directory removes it and
// detaches any bind-source pin the dead executor left mounted.
func TestEscapeExecutorKilled(t *testing.T) {
	if os.Getenv("AGENTBOX_HELPER_EXECUTOR") != "" {
		return // running as the helper; see TestHelperExecutor
	}
	ws, state := newWorkspace(t), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperExecutor$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTBOX_BIN="+agentbox, "AGENTBOX_HELPER_EXECUTOR="+ws, "AGENTBOX_HELPER_STATE="+state, "AGENTBOX_HELPER_BIN="+agentbox, "AGENTBOX_HELPER_IMAGE="+testImage)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	var id string
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "EXECUTOR "); ok {
			id = v
		}
		if sc.Text() == "RUNNING" {
			break
		}
	}
	if id == "" {
		t.Fatal("helper executor did not start a command")
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ours := func() []container.Summary {
		// Podman 4.3 fails a list now and then while a container exits
		// ("read /proc/N/cgroup: no such process"): asked again.
		for try := 1; ; try++ {
			l, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelExecutor+"="+id))})
			if err == nil || try == 5 {
				must(t, err)
				return l
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if n := len(ours()); n == 0 {
		t.Fatal("the killed executor left no container: the test proves nothing")
	}
	newRunner(t, ws, func(c *config.Config) { c.StateDir = state }) // the next start reaps
	if l := ours(); len(l) != 0 {
		t.Errorf("%d containers of the dead executor remain after the next start", len(l))
	}
	if _, err := os.Stat(filepath.Join(ws, "finished")); err == nil {
		t.Error("the command of the dead executor ran to completion")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], state+"/") && !strings.Contains(f[4], fmt.Sprintf("/pins/%d-", os.Getpid())) {
			t.Errorf("a pin of the dead executor is still mounted after the next start: %s", f[4])
		}
	}
}

// TestHelperExecutor is the executor TestEscapeExecutorKilled kills.
func TestHelperExecutor(t *testing.T) {
	ws := os.Getenv("AGENTBOX_HELPER_EXECUTOR")
	if ws == "" {
		return
	}
	agentbox, testImage = os.Getenv("AGENTBOX_HELPER_BIN"), os.Getenv("AGENTBOX_HELPER_IMAGE")
	cfg := testConfig(t, ws)
	cfg.StateDir = os.Getenv("AGENTBOX_HELPER_STATE")
	r, err := docker.New(context.Background(), cli, cfg, nil)
	must(t, err)
	fmt.Printf("EXECUTOR %s\n", r.ID())
	r.Run(context.Background(), sandbox.Spec{Shell: "echo up; sleep 120; echo done > finished", OnOutput: func(sandbox.Stream, []byte) {
		fmt.Println("RUNNING")
	}})
	select {}
}

// TestSandboxHardening reads the hardening back from inside a container.
func TestSandboxHardening(t *testing.T) {
	e := newEscape(t, func(c *config.Config) {
		c.Sandbox.NoFile, c.Sandbox.PidsLimit, c.Sandbox.MemoryMB, c.Sandbox.TmpSizeMB, c.Sandbox.FileSizeMB = 512, 100, 300, 32, 50
	})
	// gVisor lets the command open init's descriptors (a write there
	// garbles the stream; the seal of the exit status is what holds, see
	// TestEscapeForgedStatus), and enforces pids and memory inside the
	// Sentry, which shows no cgroup files: the nproc ulimit is the pids
	// limit there, and TestEscapeMemoryBomb checks memory.
	forge := `(echo forged > /proc/1/fd/1) 2>/dev/null; echo "forge $?"
ls /proc/1/fd >/dev/null 2>&1; echo "initfds $?"`
	if runtimeName == "runsc" {
		forge = ""
	}
	res, err := e.sh(t, `grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' /proc/self/status | tr -s '\t ' ' '
echo "nofile $(ulimit -n)"; echo "fsize $(ulimit -f)"; echo "nproc $(ulimit -u)"
echo "pids $(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"
echo "mem $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"
echo "tmp $(df -k /tmp | tail -1 | awk '{print $2}')"
touch /rootfs-write 2>/dev/null; echo "rootwrite $?"
echo "uid $(id -u):$(id -g)"
echo "ifaces $(ls /sys/class/net | tr '\n' ' ')"
echo "init $(cat /proc/1/cmdline | tr '\0' ' ')"
test -w /.agentbox/init; echo "initwrite $?"
`+forge+`
kill -TERM 1; kill -INT 1; kill -HUP 1; kill -QUIT 1; sleep 0.2
echo "init survived"`, 30*time.Second)
	must(t, err)
	out := string(res.Stdout)
	wants := []string{
		"Seccomp: 2", "CapEff: 0000000000000000", "CapBnd: 0000000000000000",
		"nofile 512", "fsize 102400", "tmp 32768", "rootwrite 1",
		fmt.Sprintf("uid %d:%d", wsUID, wsGID), "ifaces lo \n", "init /.agentbox/init init", "initwrite 1", "init survived",
	}
	if runtimeName == "runsc" {
		// gVisor's /proc/self/status has no NoNewPrivs line (its Sentry
		// sets no_new_privs for every process: PR_GET_NO_NEW_PRIVS says
		// 1 there even without the option).
		wants = append(wants, "nproc 100")
	} else {
		wants = append(wants, "NoNewPrivs: 1", "pids 100", "mem 314572800", "forge 1", "initfds 1")
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s%s", want, out, res.Stderr)
		}
	}
	e.intact(t)
}

// TestSandboxHardeningThreads: the seccomp profile lets ordinary programs
// start threads under every runtime. Docker's default profile answers
// clone3 with ENOSYS so glibc falls back to clone; gVisor's --oci-seccomp
// turns that errno into EPERM, and glibc then cannot start a thread at
// all, so the gVisor profile leaves clone3 to the Sentry.
func TestSandboxHardeningThreads(t *testing.T) {
	ws := newWorkspace(t)
	r, _ := newRunnerOpts(t, ws, func(c *config.Config) { c.Sandbox.Image = images.Host })
	res, err := runIn(t, r, sandbox.Spec{Argv: []string{"python3", "-c", `import threading
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads", len(out))`}, Timeout: time.Minute})
	must(t, err)
	if out := string(res.Stdout); !strings.Contains(out, "threads 4") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want threads 4", res.ExitCode, out, res.Stderr)
	}
}

// TestRedteam3NoDeviceNodesOrSetid: gVisor's tmpfs creates device nodes
// without CAP_MKNOD; the seccomp profile refuses mknod of anything but a
// file, FIFO or socket, and every mode-setting call with S_ISUID or
// S_ISGID, on every runtime (gVisor applies the profile itself).
func TestRedteam3NoDeviceNodesOrSetid(t *testing.T) {
	r, ws := rt3Runner(t)
	res, err := rt3Script(t, r, `
import os, stat
def try_(what, f):
    try: f(); print("MADE", what)
    except OSError as e: print("refused", what, e.errno)
for d in ("/tmp", os.getcwd()):
    try_(d+" chr", lambda: os.mknod(d+"/chr", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
    try_(d+" blk", lambda: os.mknod(d+"/blk", stat.S_IFBLK | 0o666, os.makedev(7, 0)))
    try_(d+" chr-with-reg-bits", lambda: os.mknod(d+"/chr2", stat.S_IFCHR | stat.S_IFREG | 0o666, os.makedev(1, 3)))
    open(d+"/f", "w").close()
    try_(d+" chmod u+s", lambda: os.chmod(d+"/f", 0o4755))
    try_(d+" chmod g+s", lambda: os.chmod(d+"/f", 0o2755))
    try_(d+" mkdir g+s", lambda: os.mkdir(d+"/sgid", 0o2755))
    os.mknod(d+"/fifo", stat.S_IFIFO | 0o600)
    print("fifo ok")
for d in ("/tmp", os.getcwd()):
    for n in ("chr", "blk", "chr2", "f", "sgid"):
        try:
            st = os.lstat(d+"/"+n)
            if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode): print("MADE node", d, n, oct(st.st_mode))
            if st.st_mode & 0o6000: print("MADE setid", d, n, oct(st.st_mode))
        except FileNotFoundError: pass
`)
	t.Logf("%s", res.Stdout)
	if err != nil || res.ExitCode != 0 || strings.Count(string(res.Stdout), "fifo ok") != 2 {
		t.Fatalf("probe did not run: code %d err %v stdout %q stderr %q", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	if strings.Contains(string(res.Stdout), "MADE") {
		t.Fatalf("a device node or a setid file was created:\n%s", res.Stdout)
	}
	for _, n := range []string{"chr", "blk", "chr2"} {
		if fi, err := os.Lstat(filepath.Join(ws, n)); err == nil {
			t.Errorf("%s exists on the host with mode %v", n, fi.Mode())
		}
	}
}

// TestRedteam3MemoryLimitHolds: under gVisor init enforces the memory
// limit from the Sentry's accounting (AnonPages). Memory that might be
// counted elsewhere (shared anonymous mappings, private ones) must still
// end the command, never let it finish past the limit.
func TestRedteam3MemoryLimitHolds(t *testing.T) {
	r, _ := newRunnerOpts(t, newWorkspace(t), func(c *config.Config) { c.Sandbox.Image = images.Host; c.Sandbox.MemoryMB = 128 })
	for _, kind := range []string{"MAP_SHARED", "MAP_PRIVATE"} {
		res, err := rt3Script(t, r, `
import mmap, sys
n = 400 << 20
m = mmap.mmap(-1, n, flags=mmap.`+kind+`)
for i in range(0, n, 4096): m[i] = 1
print("survived")
`)
		if err == nil && res.ExitCode == 0 && strings.Contains(string(res.Stdout), "survived") {
			t.Errorf("%s: 400 MiB touched under a 128 MiB limit and the command finished", kind)
		}
		t.Logf("%s: code %d oom %v err %v", kind, res.ExitCode, res.OOMKilled, err)
	}
}
