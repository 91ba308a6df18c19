package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/mount"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

func muxFrame(stream byte, p string) []byte {
	h := make([]byte, 8, 8+len(p))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(p)))
	return append(h, p...)
}

func TestDemux(t *testing.T) {
	var in bytes.Buffer
	in.Write(muxFrame(1, "hello "))
	in.Write(muxFrame(2, "diag"))
	in.Write(muxFrame(1, ""))
	in.Write(muxFrame(1, "world"))
	var diag []string
	d := &demux{r: bufio.NewReader(&in), diag: func(p []byte) { diag = append(diag, string(p)) }}
	out, err := io.ReadAll(d)
	if err != nil || string(out) != "hello world" || !slices.Equal(diag, []string{"diag"}) {
		t.Fatalf("out %q diag %q err %v", out, diag, err)
	}
	cut := bytes.NewReader(muxFrame(1, "abcdef")[:10])
	if _, err := io.ReadAll(&demux{r: bufio.NewReader(cut)}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut stream: %v", err)
	}
	bad := bytes.NewReader([]byte{9, 0, 0, 0, 0, 0, 0, 1, 'x'})
	if _, err := io.ReadAll(&demux{r: bufio.NewReader(bad)}); err == nil {
		t.Error("bad header accepted")
	}
}

func TestCheckWorkspace(t *testing.T) {
	dir := t.TempDir()
	for ws, ok := range map[string]bool{
		"/": false, "/usr": false, "/home": false, "/var/run": false, dir: true,
		filepath.Dir(filepath.Join(dir, "x")): true,
	} {
		if err := checkWorkspace(ws, "unix:///nonexistent/docker.sock"); (err == nil) != ok {
			t.Errorf("%s: %v", ws, err)
		}
	}
	if err := checkWorkspace(dir, "unix://"+filepath.Join(dir, "sub", "docker.sock")); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("workspace holding the engine socket: %v", err)
	}
}

// testRunner is a Runner with no engine, for the host-side logic.
func testRunner(t *testing.T, ws string) *Runner {
	cfg := config.Default()
	return &Runner{cfg: cfg.Sandbox, workspace: ws, uid: os.Getuid(), gid: os.Getgid(), user: "1:2",
		initPath: "/bin/true", image: "img", path: sandbox.Path, id: "0123456789abcdef"}
}

func TestProtectedPaths(t *testing.T) {
	ws := t.TempDir()
	r := testRunner(t, ws)
	// No .git: nothing to protect, nothing created.
	ms, fp1, err := r.mounts()
	if err != nil || len(ms) != 2 {
		t.Fatalf("mounts %v, %v", ms, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Fatal(".git created")
	}
	// .git without hooks: a placeholder hooks dir (and config) are made
	// and mounted read-only.
	os.Mkdir(filepath.Join(ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	ms, fp2, err := r.mounts()
	if err != nil {
		t.Fatal(err)
	}
	if fp1 == fp2 {
		t.Error("fingerprint did not change")
	}
	ro := map[string]bool{}
	for _, m := range ms {
		if m.ReadOnly && m.Type == mount.TypeBind {
			ro[m.Target] = true
		}
		if m.Target == ws && m.ReadOnly {
			t.Error("workspace mounted read-only")
		}
	}
	for _, p := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "config"), InitPath} {
		if !ro[p] {
			t.Errorf("%s not mounted read-only: %+v", p, ms)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, ".git", "hooks")); err != nil || !fi.IsDir() {
		t.Errorf("hooks placeholder: %v", err)
	}
	// A symlinked protected path is refused.
	os.RemoveAll(filepath.Join(ws, ".git", "hooks"))
	os.Symlink("/etc", filepath.Join(ws, ".git", "hooks"))
	if _, _, err := r.mounts(); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("symlinked hooks: %v", err)
	}
	// A symlinked .git too.
	os.RemoveAll(filepath.Join(ws, ".git"))
	os.Symlink(t.TempDir(), filepath.Join(ws, ".git"))
	if _, _, err := r.fingerprint(); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("symlinked .git: %v", err)
	}
	// .git as a file (worktree): nothing to protect.
	os.Remove(filepath.Join(ws, ".git"))
	os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	if ms, _, err := r.mounts(); err != nil || len(ms) != 2 {
		t.Errorf(".git file: %v %v", ms, err)
	}
}

func TestContainerSpecHardening(t *testing.T) {
	r := testRunner(t, t.TempDir())
	cfg, host := r.containerSpec(nil)
	switch {
	case !host.ReadonlyRootfs, host.NetworkMode != "none", !cfg.NetworkDisabled,
		!slices.Equal(host.CapDrop, []string{"ALL"}), !slices.Contains(host.SecurityOpt, "no-new-privileges"),
		host.Privileged, host.Memory != r.cfg.MemoryMB<<20, host.MemorySwap != host.Memory,
		host.PidsLimit == nil || *host.PidsLimit != r.cfg.PidsLimit, host.NanoCPUs <= 0,
		cfg.User != "1:2", cfg.Tty, !cfg.OpenStdin || !cfg.StdinOnce, host.Tmpfs["/tmp"] == "":
		t.Errorf("spec not hardened: %+v %+v", cfg, host)
	}
	for _, o := range host.SecurityOpt {
		if o == "seccomp=unconfined" || o == "apparmor=unconfined" {
			t.Errorf("security opt %s", o)
		}
	}
	names := map[string]bool{}
	for _, u := range host.Ulimits {
		names[u.Name] = true
	}
	for _, n := range []string{"nofile", "nproc", "fsize"} {
		if !names[n] {
			t.Errorf("ulimit %s missing", n)
		}
	}
	for _, m := range host.Mounts {
		if filepath.Base(m.Source) == "docker.sock" {
			t.Errorf("engine socket mounted")
		}
	}
}

func TestInitBinary(t *testing.T) {
	if _, err := initBinary(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("missing binary: %v", err)
	}
	f := filepath.Join(t.TempDir(), "notexec")
	os.WriteFile(f, []byte("x"), 0o644)
	if _, err := initBinary(f); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("non-executable: %v", err)
	}
}
