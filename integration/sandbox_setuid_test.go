//go:build integration

package integration

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
)

// The setuid tests use a workspace owned by root, as under CI and
// `make demo`: the container then runs as uid 0 (without capabilities) and
// owns every file it creates, so only the seccomp profile stops it from
// planting a setuid-root binary for the host to run later.

// rootWorkspace makes a workspace owned by uid 0 with a little content.
func rootWorkspace(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the setuid tests need to run as root (a root-owned workspace)")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	ws = filepath.Join(ws, "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644))
	fi, err := os.Stat(ws)
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
		t.Fatalf("workspace owned by %d:%d", st.Uid, st.Gid)
	}
	return ws
}

// noSetid fails for every entry under ws carrying S_ISUID or S_ISGID.
func noSetid(t *testing.T, ws string) {
	t.Helper()
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Error(err)
			return nil
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
		return nil
	})
}

func wantLines(t *testing.T, res sandbox.Result, want ...string) {
	t.Helper()
	out := "\n" + string(res.Stdout)
	for _, w := range want {
		if !strings.Contains(out, "\n"+w+"\n") {
			t.Errorf("missing %q in stdout:\n%s\nstderr:\n%s", w, res.Stdout, res.Stderr)
		}
	}
}

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Errorf("%v", err)
		return 0
	}
	return fi.Mode()
}

// TestSandboxSetuidBusybox: the minimal image's tools.
func TestSandboxSetuidBusybox(t *testing.T) {
	ws := rootWorkspace(t)
	before := tree(t, ws)
	r, _ := newRunner(t, ws, func(c *config.Config) { c.Sandbox.AllowRootWorkspace = true })
	res, err := runIn(t, r, sandbox.Spec{Shell: `id -u
printf 'hi\n' > plain; echo "create=$?"
chmod 0755 plain; echo "c755=$?"
chmod 0644 plain; echo "c644=$?"
mkdir -m 0755 dir; echo "mkdir755=$?"
cp plain us; chmod u+s us; echo "us=$?"
cp plain gs; chmod g+s gs; echo "gs=$?"
cp plain both; chmod 6755 both; echo "both=$?"
mkdir -m 2755 sgdir; echo "sgdir=$?"
mkdir -m 4755 sudir; echo "sudir=$?"
mkfifo -m 4644 fifo; echo "fifo=$?"
exit 0`, Timeout: time.Minute})
	must(t, err)
	wantLines(t, res, "0", "create=0", "c755=0", "c644=0", "mkdir755=0", "us=1", "gs=1", "both=1", "sgdir=1", "sudir=1", "fifo=1")
	noSetid(t, ws)
	if m := modeOf(t, filepath.Join(ws, "plain")); m != 0o644 {
		t.Errorf("plain: %v", m)
	}
	if m := modeOf(t, filepath.Join(ws, "dir")); m != fs.ModeDir|0o755 {
		t.Errorf("dir: %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "plain")); string(b) != "hi\n" {
		t.Errorf("plain holds %q", b)
	}
	assertIntact(t, ws, before, "plain", "dir", "us", "gs", "both", "sgdir", "sudir", "fifo")
}

// setuidPython tries every mode-taking system call directly (x86-64
// numbers), then the allowed counterparts. Each line: name=result errno.
const setuidPython = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
sc = libc.syscall
sc.restype = ctypes.c_long
AT = -100
O = os.O_CREAT | os.O_WRONLY
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = sc(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print("%s=%d %d" % (name, 0 if r >= 0 else -1, ctypes.get_errno() if r < 0 else 0), flush=True)
open("base", "w").close()
fd = os.open("base", os.O_RDONLY)
call("chmod", 90, b"base", 0o4755)
call("fchmod", 91, fd, 0o2755)
call("fchmodat", 268, AT, b"base", 0o6755, 0)
call("fchmodat2", 452, AT, b"base", 0o4755, 0)
call("creat", 85, b"r_creat", 0o4755)
call("open", 2, b"r_open", O, 0o4755)
call("openat", 257, AT, b"r_openat", O, 0o2755)
call("mknod", 133, b"r_mknod", 0o100000 | 0o4755, 0)
call("mknodat", 259, AT, b"r_mknodat", 0o100000 | 0o2755, 0)
call("mkdir", 83, b"r_mkdir", 0o2755)
call("mkdirat", 258, AT, b"r_mkdirat", 0o4755)
how = (ctypes.c_uint64 * 3)(O, 0o4755, 0)
call("openat2", 437, AT, b"r_openat2", ctypes.byref(how), 24)
how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)
call("openat2_plain", 437, AT, b"base", ctypes.byref(how), 24)
params = (ctypes.c_uint8 * 120)()
call("io_uring_setup", 425, 4, ctypes.byref(params))
call("io_uring_enter", 426, 0, 0, 0, 0, 0, 0)
call("io_uring_register", 427, 0, 0, 0, 0)
call("ok_chmod", 90, b"base", 0o755)
call("ok_fchmod", 91, fd, 0o640)
call("ok_open", 2, b"ok_open", O, 0o644)
call("ok_openat", 257, AT, b"ok_openat", O, 0o600)
call("ok_creat", 85, b"ok_creat", 0o755)
call("ok_mkdir", 83, b"ok_mkdir", 0o755)
call("ok_mkdirat", 258, AT, b"ok_mkdirat", 0o700)
call("ok_mknod", 133, b"ok_fifo", 0o010000 | 0o644, 0)
call("ok_sticky", 83, b"ok_sticky", 0o1777)
call("ok_readonly", 2, b"README", os.O_RDONLY, 0)
`

// TestSandboxSetuidHostImage: the host toolchain (coreutils, python3,
// perl, tar, cp -p of a host setuid binary) and raw system calls.
func TestSandboxSetuidHostImage(t *testing.T) {
	ensureHostImage(t)
	for _, tool := range []string{"python3", "perl", "install", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the host toolchain lacks %s: %v", tool, err)
		}
	}
	ws := rootWorkspace(t)
	// Set by the host's root: the kernel must clear them when the
	// container writes or chowns the files (no CAP_FSETID).
	for name, mode := range map[string]os.FileMode{"host-suid-w": os.ModeSetuid | 0o755, "host-suid-c": os.ModeSetuid | 0o755, "host-sgid-w": os.ModeSetgid | 0o755} {
		must(t, os.WriteFile(filepath.Join(ws, name), []byte("#!/bin/sh\n"), 0o755))
		must(t, os.Chmod(filepath.Join(ws, name), mode))
	}
	suidHost := ""
	for _, p := range []string{"/usr/bin/gpasswd", "/usr/bin/passwd", "/usr/bin/chfn", "/usr/bin/newgrp"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSetuid != 0 {
			suidHost = p
			break
		}
	}
	if suidHost == "" {
		suidHost = "/nonexistent"
	}
	before := tree(t, ws)
	script := `set +e
id -u
printf 'hi\n' > plain; echo "create=$?"
chmod 0755 plain; echo "c755=$?"
chmod 0644 plain; echo "c644=$?"
mkdir -m 0755 dir; echo "mkdir755=$?"
cp plain us; chmod u+s us; echo "us=$?"
cp plain gs; chmod g+s gs; echo "gs=$?"
install -m 4755 plain inst; echo "install=$?"
install -m 2755 plain inst2; echo "install2=$?"
mkdir -m 2755 sgdir; echo "sgdir=$?"
cp -p ` + suidHost + ` cpp 2>/dev/null; echo "cpp done"
python3 -c 'import os; os.close(os.open("pyopen", os.O_CREAT|os.O_WRONLY, 0o4755))'; echo "pyopen=$?"
python3 -c 'import os; os.chmod("plain", 0o4755)'; echo "pychmod=$?"
python3 -c 'import os, stat; os.mknod("pymknod", stat.S_IFREG|0o4755)'; echo "pymknod=$?"
python3 -c 'import os; os.mkdir("pymkdir", 0o2755)'; echo "pymkdir=$?"
perl -MFcntl -e 'sysopen(my $f, "plopen", O_CREAT|O_WRONLY, 04755) or exit 1'; echo "plopen=$?"
perl -e 'chmod(04755, "plain") == 1 or exit 1'; echo "plchmod=$?"
perl -e 'mkdir("plmkdir", 02755) or exit 1; exit((stat "plmkdir")[2] & 06000 ? 2 : 0)'; echo "plmkdir=$?"
python3 -c '
import tarfile, io
with tarfile.open("/tmp/t.tar", "w") as t:
    i = tarfile.TarInfo("tarred"); i.mode = 0o4755; i.size = 3
    t.addfile(i, io.BytesIO(b"hi\n"))
'; tar -xpf /tmp/t.tar 2>/dev/null; echo "tar done"
echo more >> host-suid-w; echo "write=$?"
echo more >> host-sgid-w; echo "writeg=$?"
chown 0:0 host-suid-c; echo "chown=$?"
`
	raw := runtime.GOARCH == "amd64"
	if raw {
		script += "python3 -c '" + strings.ReplaceAll(setuidPython, "'", `'"'"'`) + "'; echo \"raw=$?\"\n"
	} else {
		t.Logf("raw system call checks only on amd64 (this is %s)", runtime.GOARCH)
	}
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	cfg.Sandbox.AllowRootWorkspace = true
	r := openRunner(t, cfg)
	res, err := runIn(t, r, sandbox.Spec{Shell: script, Timeout: 2 * time.Minute})
	must(t, err)
	wantLines(t, res, "0", "create=0", "c755=0", "c644=0", "mkdir755=0", "us=1", "gs=1", "install=1", "install2=1", "sgdir=1",
		"pyopen=1", "pychmod=1", "pymknod=1", "pymkdir=1", "plopen=1", "plchmod=1", "plmkdir=1", "cpp done", "tar done",
		"write=0", "writeg=0", "chown=0")
	if raw {
		wantLines(t, res, "raw=0",
			"chmod=-1 1", "fchmod=-1 1", "fchmodat=-1 1", "fchmodat2=-1 1", "creat=-1 1", "open=-1 1", "openat=-1 1",
			"mknod=-1 1", "mknodat=-1 1", "mkdir=-1 1", "mkdirat=-1 1",
			"openat2=-1 38", "openat2_plain=-1 38", "io_uring_setup=-1 1", "io_uring_enter=-1 1", "io_uring_register=-1 1",
			"ok_chmod=0 0", "ok_fchmod=0 0", "ok_open=0 0", "ok_openat=0 0", "ok_creat=0 0", "ok_mkdir=0 0", "ok_mkdirat=0 0",
			"ok_mknod=0 0", "ok_sticky=0 0", "ok_readonly=0 0")
		if m := modeOf(t, filepath.Join(ws, "ok_sticky")); m&fs.ModeSticky == 0 {
			t.Errorf("ok_sticky: %v", m)
		}
		if m := modeOf(t, filepath.Join(ws, "base")); m != 0o640 {
			t.Errorf("base: %v", m)
		}
	}
	noSetid(t, ws)
	if m := modeOf(t, filepath.Join(ws, "plain")); m != 0o644 {
		t.Errorf("plain: %v", m)
	}
	for _, f := range []string{"host-suid-w", "host-suid-c"} {
		if m := modeOf(t, filepath.Join(ws, f)); m != 0o755 {
			t.Errorf("%s: %v (the kernel should have cleared setuid)", f, m)
		}
	}
	created := []string{"plain", "dir", "us", "gs", "inst", "inst2", "sgdir", "cpp", "pyopen", "pymknod", "pymkdir", "plopen", "plmkdir", "tarred",
		"host-suid-w", "host-suid-c", "host-sgid-w", "base", "r_creat", "r_open", "r_openat", "r_mknod", "r_mknodat", "r_mkdir", "r_mkdirat", "r_openat2",
		"ok_open", "ok_openat", "ok_creat", "ok_mkdir", "ok_mkdirat", "ok_fifo", "ok_sticky"}
	assertIntact(t, ws, before, created...)
	for _, keep := range []string{"README", "src/main.go"} {
		if _, err := os.Stat(filepath.Join(ws, keep)); err != nil {
			t.Error(err)
		}
	}
}
