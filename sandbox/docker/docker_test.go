package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
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
	mountsOf := func(ro bool) (map[string]bindSource, string, error) {
		t.Helper()
		srcs, err := r.sources(ro)
		defer closeSources(srcs)
		if err != nil {
			return nil, "", err
		}
		m := map[string]bindSource{}
		for _, s := range srcs {
			if _, dup := m[s.target]; dup {
				t.Fatalf("%s mounted twice", s.target)
			}
			m[s.target] = s
		}
		return m, fingerprintOf(srcs), nil
	}
	// No .git, no protected path: the workspace and init only.
	ms, fp1, err := mountsOf(false)
	if err != nil || len(ms) != 2 || ms[ws].ro || !ms[InitPath].ro {
		t.Fatalf("mounts %v, %v", ms, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Fatal(".git created")
	}
	// .git without hooks: placeholders made; .git is its own (writable)
	// mount point, its behaviour files read-only; protected root entries
	// read-only; deeper matches are not mounted.
	must(t, os.Mkdir(filepath.Join(ws, ".git"), 0o755))
	must(t, os.Mkdir(filepath.Join(ws, ".git", "objects"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".envrc"), []byte("echo\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".yarnrc.yml"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, "sub", ".vscode"), 0o755))
	ms, fp2, err := mountsOf(false)
	if err != nil {
		t.Fatal(err)
	}
	if fp1 == fp2 {
		t.Error("fingerprint did not change")
	}
	// The hand-over's fingerprint (workspace side only) matches the one a
	// container is made with, else every warm container would be thrown
	// away.
	all, err := r.sources(false)
	if err != nil {
		t.Fatal(err)
	}
	made := fingerprintOf(r.workspaceSide(all))
	closeSources(all)
	if now, err := r.fingerprint(false); err != nil || now != made {
		t.Errorf("hand-over fingerprint %q (%v) differs from the container's %q", now, err, made)
	}
	j := func(p ...string) string { return filepath.Join(append([]string{ws}, p...)...) }
	for _, p := range []string{j(".git", "hooks"), j(".git", "info"), j(".git", "config"), j(".envrc"), j(".yarnrc.yml"), InitPath} {
		if b, ok := ms[p]; !ok || !b.ro {
			t.Errorf("%s not mounted read-only: %+v", p, ms)
		}
	}
	if b, ok := ms[j(".git")]; !ok || b.ro || !b.dir {
		t.Errorf(".git is not a writable mount point: %+v", b)
	}
	if _, ok := ms[j("sub", ".vscode")]; ok {
		t.Error("a nested match was mounted")
	}
	if _, ok := ms[j(".git", "objects")]; ok {
		t.Error("objects mounted")
	}
	if fi, err := os.Stat(j(".git", "hooks")); err != nil || !fi.IsDir() {
		t.Errorf("hooks placeholder: %v", err)
	}
	// The read-only flavour: the workspace read-only, nothing on top.
	ms, _, err = mountsOf(true)
	if err != nil || len(ms) != 2 || !ms[ws].ro {
		t.Fatalf("read-only mounts %+v, %v", ms, err)
	}
	// A symlinked protected path is refused.
	must(t, os.RemoveAll(j(".git", "hooks")))
	must(t, os.Symlink("/etc", j(".git", "hooks")))
	if _, _, err := mountsOf(false); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("symlinked hooks: %v", err)
	}
	// A symlinked .git too.
	must(t, os.RemoveAll(j(".git")))
	must(t, os.Symlink(t.TempDir(), j(".git")))
	if _, err := r.fingerprint(false); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("symlinked .git: %v", err)
	}
	// A FIFO at a protected path is refused.
	must(t, os.Remove(j(".git")))
	if err := syscall.Mkfifo(j(".envrc2"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(j(".envrc")))
	must(t, os.Rename(j(".envrc2"), j(".envrc")))
	if _, _, err := mountsOf(false); !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("FIFO .envrc: %v", err)
	}
	must(t, os.Remove(j(".envrc")))
	// .git as a file (worktree, submodule): the pointer itself read-only.
	must(t, os.WriteFile(j(".git"), []byte("gitdir: /elsewhere\n"), 0o644))
	if ms, _, err := mountsOf(false); err != nil || !ms[j(".git")].ro || ms[j(".git")].dir {
		t.Errorf(".git file: %v %v", ms, err)
	}
	// The workspace swapped for another directory after the Runner opened
	// it: sources still name the original inode.
	orig, _ := os.Stat(ws)
	ms, _, _ = mountsOf(true)
	if st := orig.Sys().(*syscall.Stat_t); ms[ws].ino != st.Ino {
		t.Errorf("workspace inode %d, want %d", ms[ws].ino, st.Ino)
	}
}

func TestContainerSpecHardening(t *testing.T) {
	r := testRunner(t, t.TempDir())
	cfg, host := r.containerSpec(nil, nil)
	switch {
	case !host.ReadonlyRootfs, host.NetworkMode != "none", !cfg.NetworkDisabled,
		!slices.Equal(host.CapDrop, []string{"ALL"}), !slices.Contains(host.SecurityOpt, "no-new-privileges"),
		host.Privileged, host.Memory <= 0 || host.Memory != r.cfg.EffectiveMemoryMB()<<20, host.MemorySwap != host.Memory,
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
	if _, err := initBinary(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, sandbox.ErrUnavailable) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing binary: %v, want ErrUnavailable wrapping fs.ErrNotExist", err)
	}
	f := filepath.Join(t.TempDir(), "notexec")
	must(t, os.WriteFile(f, []byte("x"), 0o644))
	if _, err := initBinary(f); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("non-executable: %v", err)
	}
}

// TestEnsureImageCanceled: a start cancelled while the engine is asked for
// the image is both ErrUnavailable and context.Canceled (the cause was once
// flattened into text).
func TestEnsureImageCanceled(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+filepath.Join(t.TempDir(), "none.sock")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = ensureImage(ctx, cli, "example.org/not-agentbox:1", t.TempDir())
	if !errors.Is(err, sandbox.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping context.Canceled", err)
	}
}

// TestStartEgressBadPolicy: a proxy that cannot start is ErrUnavailable,
// ErrNoEgress and the policy's own error at once.
func TestStartEgressBadPolicy(t *testing.T) {
	cfg := config.Default()
	cfg.Network.Mode = config.NetworkAllowlist
	cfg.Network.Allow = []string{"ex*ample.org"}
	err := testRunner(t, t.TempDir()).startEgress(&cfg, options{})
	for _, want := range []error{sandbox.ErrUnavailable, sandbox.ErrNoEgress, egress.ErrBadRule} {
		if !errors.Is(err, want) {
			t.Errorf("err = %v, want it to wrap %v", err, want)
		}
	}
}

// BenchmarkFingerprint is the hand-over's freshness check of a writable
// container's mounts (a repository with hooks and a few protected files).
func BenchmarkFingerprint(b *testing.B) {
	ws := b.TempDir()
	for _, d := range []string{".git/hooks", ".git/info", ".git/objects/info", ".vscode", "src"} {
		must(b, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	must(b, os.WriteFile(filepath.Join(ws, ".git", "config"), nil, 0o644))
	must(b, os.WriteFile(filepath.Join(ws, ".envrc"), nil, 0o644))
	cfg := config.Default()
	r := &Runner{cfg: cfg.Sandbox, workspace: ws, uid: os.Getuid(), gid: os.Getgid(), initPath: "/bin/true"}
	b.ResetTimer()
	for range b.N {
		if _, err := r.fingerprint(false); err != nil {
			b.Fatal(err)
		}
	}
}
