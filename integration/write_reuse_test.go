//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// Write reuse: a write's container serves the next request
// (protocol 5). Init answers a write with a sealed status saying
// Reusable and waits for another request; the executor puts the
// container back in the warm read-write pool. Each test is an attack on
// that: desynchronise init's stream so that a later request's status is
// misread, make a container that ran something of the agent's serve
// again, make a reused container's stale mounts matter, or leak
// containers. Every test runs under the backend and runtime the run is
// configured with (AGENTBOX_SANDBOX_RUNTIME=runsc, AGENTBOX_SANDBOX_BACKEND=podman).

// rt5Containers lists the ids of r's containers and whether each is
// running.
func rt5Containers(t *testing.T, r *docker.Runner) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelExecutor+"="+r.ID()))})
	must(t, err)
	m := map[string]bool{}
	for _, c := range l {
		m[c.ID] = c.State == "running"
	}
	return m
}

// rt5Settled waits until both pools are full and no removal is in flight,
// then checks that r has exactly its two warm containers, both running:
// nothing leaked, and no dead container waits in a pool.
func rt5Settled(t *testing.T, r *docker.Runner) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.WaitWarm(ctx, 1); err != nil {
		t.Fatalf("pools did not refill: %v", err)
	}
	var got map[string]bool
	want := 2 + r.KeptForWrites() // one per pool, and those kept for writes
	for range 100 {               // a removal's API call may still be listed for a moment
		got = rt5Containers(t, r)
		if len(got) == want {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != want {
		t.Errorf("runner has %d containers with full pools, want %d (one per pool, %d kept for writes): %v", len(got), want, r.KeptForWrites(), got)
	}
	for id, running := range got {
		if !running {
			t.Errorf("container %.12s is not running: left behind by a failed removal, or killed after it went back to a pool", id)
		}
	}
	return got
}

// rt5Check runs a command that must be attributed its own result: its
// exit code and a nonce it prints.
func rt5Check(t *testing.T, r sandbox.Runner, what string) sandbox.Result {
	t.Helper()
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	res, err := runIn(t, r, sandbox.Spec{Shell: "echo " + nonce + "; exit 42", Timeout: time.Minute})
	if err != nil || res.ExitCode != 42 || strings.TrimSpace(string(res.Stdout)) != nonce || res.Killed {
		t.Fatalf("%s: the next command's result is not its own: %v exit=%d killed=%v out=%q", what, err, res.ExitCode, res.Killed, res.Stdout)
	}
	return res
}

func rt5Write(ctx context.Context, r sandbox.Runner, p string, content []byte) error {
	return r.WriteFile(ctx, sandbox.FileWrite{Path: p, Content: content, Mode: 0o644})
}

// TestRedteam5WriteStreamInStep: file content the executor streams as
// Data frames holds the bytes of whole frames (an Exit sealed with a
// made-up key, a Request, the empty Data frame that ends a stream) at
// every chunk boundary, and sizes around the chunk size. Were the Data
// stream parsed out of step, init would take them for the end of the
// content, the next request or a status. Each file must read back
// exactly, the writes must share the pool's container, and a command
// after them must get its own result there.
func TestRedteam5WriteStreamInStep(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt5Settled(t, r)

	key := make([]byte, initproc.KeyLen)
	var evil []byte
	evil = initproc.AppendFrame(evil, initproc.Data, nil)
	evil = initproc.AppendFrame(evil, initproc.Exit, initproc.SealExit(key, []byte(`{"code":0,"reusable":true}`)))
	evil = initproc.AppendFrame(evil, initproc.Request, []byte(`{"shell":"touch /tmp/pwned","key":"AAAA"}`))
	evil = initproc.AppendFrame(evil, initproc.Data, nil)
	fill := func(n int) []byte {
		b := bytes.Repeat(evil, n/len(evil)+2)[:n]
		// Frame bytes exactly at the chunk boundaries too.
		for _, at := range []int{initproc.DataChunk - 5, initproc.DataChunk, 2*initproc.DataChunk - 5} {
			if at >= 0 && at+len(evil) <= n {
				copy(b[at:], evil)
			}
		}
		return b
	}
	sizes := []int{0, 1, 5, len(evil), initproc.DataChunk - 1, initproc.DataChunk, initproc.DataChunk + 1, 2*initproc.DataChunk + 5}
	for i, n := range sizes {
		content := fill(n)
		p := filepath.Join(ws, "frames", strconv.Itoa(i))
		if err := rt5Write(ctx, r, p, content); err != nil {
			t.Fatalf("write of %d frame-like bytes: %v", n, err)
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("write of %d frame-like bytes read back %d bytes (%v)", n, len(got), err)
		}
	}
	// (Out of step, init would have failed a write or the command below;
	// which container served is not checked: under gVisor a slow write
	// lets the pool's refill replace the given-back container.)
	rt5Check(t, r, "after frame-like writes")
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Fatal("a Request frame inside file content was run")
	}
	rt5Settled(t, r)
}

// TestRedteam5OversizeWriteInStep: content beyond the fsize ulimit
// fails inside init with EFBIG (and SIGXFSZ to init, which must survive
// it) after init has read only part of the stream. The rest must be
// drained so the container's next request is understood, nothing of the
// refused file may remain, and the next write and command must get their
// own results.
func TestRedteam5OversizeWriteInStep(t *testing.T) {
	r, ws := newRunner(t, "", func(c *config.Config) { c.Sandbox.FileSizeMB = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt5Settled(t, r)
	for i := range 3 {
		big := bytes.Repeat([]byte("Z"), 3<<20+i)
		err := rt5Write(ctx, r, filepath.Join(ws, "big"), big)
		var we *sandbox.WriteError
		if err == nil || !errors.As(err, &we) {
			t.Fatalf("write beyond the fsize limit: %v (want a write error)", err)
		}
		if !strings.Contains(err.Error(), "EFBIG") && !strings.Contains(err.Error(), "too large") {
			t.Errorf("write beyond the fsize limit: %v (want EFBIG)", err)
		}
		if err := rt5Write(ctx, r, filepath.Join(ws, "small"), []byte("ok "+strconv.Itoa(i))); err != nil {
			t.Fatalf("write after a refused oversize write: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "small")); string(b) != "ok "+strconv.Itoa(i) {
			t.Fatalf("write after a refused oversize write: read back %q", b)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "big")); err == nil {
		t.Error("the refused oversize file exists")
	}
	rt5NoTemp(t, ws)
	rt5Check(t, r, "after oversize writes")
	rt5Settled(t, r)
}

func rt5NoTemp(t *testing.T, ws string) {
	t.Helper()
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".agentbox-write-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// TestRedteam5CanceledWriteNotReused: a write canceled while its content
// is still streaming leaves init in the middle of the Data frames. Its
// container must never serve again (it is killed and removed), the
// target must be all or nothing, the next write and command must get
// their own results, and no container may leak.
func TestRedteam5CanceledWriteNotReused(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 40<<20/16)
	canceled := 0
	for i := 0; i < 4; i++ {
		before := rt5Settled(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(5+10*i)*time.Millisecond, cancel)
		p := filepath.Join(ws, "c", strconv.Itoa(i))
		err := rt5Write(ctx, r, p, big)
		cancel()
		if err == nil {
			if b, _ := os.ReadFile(p); !bytes.Equal(b, big) {
				t.Fatalf("write %d succeeded but the file holds %d bytes", i, len(b))
			}
			continue
		}
		canceled++
		if !errors.Is(err, sandbox.ErrCanceled) {
			t.Errorf("canceled write %d: %v (want ErrCanceled)", i, err)
		}
		if fi, err := os.Stat(p); err == nil && fi.Size() != int64(len(big)) {
			t.Errorf("canceled write %d left a partial file of %d bytes", i, fi.Size())
		}
		// Init was killed mid-write: the executor removes its temporary
		// file (it named it).
		rt5NoTemp(t, ws)
		// The read-write pool's container took the write: it must be gone.
		after := rt5Settled(t, r)
		survivors := 0
		for id := range before {
			if after[id] {
				survivors++
			}
		}
		if survivors != len(before)-1 { // all but the write's
			t.Errorf("canceled write %d: %d of the %d containers survived, want %d (the write's must be removed)", i, survivors, len(before), len(before)-1)
		}
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		if err := rt5Write(wctx, r, filepath.Join(ws, "after"), []byte("after "+strconv.Itoa(i))); err != nil {
			t.Fatalf("write after a canceled write: %v", err)
		}
		wcancel()
		rt5Check(t, r, "after a canceled write")
	}
	if canceled == 0 {
		t.Fatal("no write was canceled mid-stream: the attack did not happen")
	}
	rt5Settled(t, r)
}

// TestRedteam5TimedOutWriteNotReused: a write that outlives its timeout
// (sandbox.default_timeout, tiny here, against 40 MB) is killed: its
// container must not go back to the pool, and the next command gets its
// own result in another container.
func TestRedteam5TimedOutWriteNotReused(t *testing.T) {
	r, ws := newRunner(t, "", func(c *config.Config) { c.Sandbox.DefaultTimeout = 30 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := rt5Settled(t, r)
	err := rt5Write(ctx, r, filepath.Join(ws, "slow"), bytes.Repeat([]byte("s"), 40<<20))
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Fatalf("40 MB write with a 30 ms timeout: %v (want ErrTimeout)", err)
	}
	rt5NoTemp(t, ws)
	// The write's container (kept for writes, or the pool's) was killed:
	// it is gone, not back among those that serve.
	mid := rt5Settled(t, r)
	var gone []string
	for id := range before {
		if !mid[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) != 1 {
		t.Errorf("%d containers gone after the timed-out write, want 1 (its own): %.12s", len(gone), gone)
	}
	res := rt5Check(t, r, "after a timed-out write")
	if slices.Contains(gone, res.ContainerID) {
		t.Errorf("the command ran in %.12s, the container of the timed-out write", res.ContainerID)
	}
	rt5Settled(t, r)
}

// TestRedteam5PlantedSpecialFiles: a command plants what a write must
// not open or write through: a FIFO (with a reader of its own waiting on
// it in another container), a FIFO and a socket-less device node as
// parent directories, a symlink to a file outside the workspace, a
// symlink into the workspace's protected .git, and a device node (made on
// the host: the sandbox cannot mknod one). Every write must be refused
// promptly, change nothing, feed nothing to the FIFO's reader, and leave
// the container in step: the next write and command get their own
// results in the same container.
func TestRedteam5PlantedSpecialFiles(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	outside := filepath.Join(t.TempDir(), "victim")
	must(t, os.WriteFile(outside, []byte("victim\n"), 0o666))
	// The FIFOs are made on the host: under gVisor a FIFO the command
	// makes exists inside its own sandbox only (the host, and so every
	// other container, sees no entry at all).
	must(t, syscall.Mknod(filepath.Join(ws, "nulldev"), syscall.S_IFCHR|0o666, 1<<8|3))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o666))
	must(t, syscall.Mkfifo(filepath.Join(ws, "pdir"), 0o666))
	for _, n := range []string{"nulldev", "fifo", "pdir"} {
		must(t, os.Lchown(filepath.Join(ws, n), wsUID, wsGID))
	}
	res, err := runIn(t, r, sandbox.Spec{Shell: "busybox mkfifo cfifo; mkdir -p .git/hooks && " +
		"ln -s " + outside + " outlink && ln -s .git/hooks hooklink && ln -s /proc/1/fd/0 stdinlink", Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("planting: %v %+v %s", err, res, res.Stderr)
	}
	targets := []string{"fifo", "pdir/x", "nulldev", "nulldev/x", "outlink", "hooklink/pre-commit", "stdinlink"}
	if fi, err := os.Lstat(filepath.Join(ws, "cfifo")); err == nil && fi.Mode().Type() == os.ModeNamedPipe {
		targets = append(targets, "cfifo") // runc: the command's FIFO is the host's
	} else {
		t.Logf("the command's FIFO is not on the host (%v): gVisor", err)
	}
	rt5Settled(t, r)

	// A reader in its own container, blocked on the FIFO.
	read := make(chan sandbox.Result, 1)
	go func() {
		res, _ := runIn(t, r, sandbox.Spec{Shell: "busybox timeout 4 cat fifo; echo read-done", Timeout: time.Minute})
		read <- res
	}()
	time.Sleep(time.Second)
	for _, rel := range targets {
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		t0 := time.Now()
		err := rt5Write(wctx, r, filepath.Join(ws, rel), []byte("#!/bin/sh\necho pwned\n"))
		wcancel()
		if err == nil {
			t.Errorf("write to planted %s succeeded", rel)
		} else if errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrCanceled) {
			t.Errorf("write to planted %s blocked: %v", rel, err)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("write to planted %s took %v", rel, d)
		}
	}
	res = <-read
	if strings.Contains(string(res.Stdout), "pwned") {
		t.Errorf("the FIFO's reader got the write's content: %q", res.Stdout)
	}
	if b, _ := os.ReadFile(outside); string(b) != "victim\n" {
		t.Errorf("wrote through a symlink out of the workspace: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("planted a hook through a symlink")
	}
	for rel, want := range map[string]os.FileMode{"fifo": os.ModeNamedPipe, "pdir": os.ModeNamedPipe, "nulldev": os.ModeCharDevice | os.ModeDevice, "outlink": os.ModeSymlink, "stdinlink": os.ModeSymlink} {
		if fi, err := os.Lstat(filepath.Join(ws, rel)); err != nil || fi.Mode().Type() != want {
			t.Errorf("%s was replaced: %v %v", rel, fi.Mode(), err)
		}
	}
	rt5NoTemp(t, ws)
	if err := rt5Write(ctx, r, filepath.Join(ws, "fine"), []byte("fine")); err != nil {
		t.Fatalf("write after refused special files: %v", err)
	}
	rt5Check(t, r, "after refused special files")
	rt5Settled(t, r)
}

// TestRedteam5StaleMountsAfterWrite: a given-back container's read-only
// mounts are those of its creation. A protected path that appears
// afterwards (made by the approved write the container itself just did,
// or by a command in another container) is not mounted read-only in it,
// so it must never serve a command again: the fingerprint check at
// hand-over applies to given-back containers, and the next command sees
// the new protected path read-only.
func TestRedteam5StaleMountsAfterWrite(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, step := range []struct {
		name   string
		create func()
		rel    string
	}{
		{"approved write of a protected path", func() {
			if err := r.WriteFile(ctx, sandbox.FileWrite{Path: filepath.Join(ws, ".envrc"), Content: []byte("export A=1\n"), Mode: 0o644, ApprovedProtected: true}); err != nil {
				t.Fatalf("approved protected write: %v", err)
			}
		}, ".envrc"},
		{"protected path made elsewhere", func() {
			must(t, os.Mkdir(filepath.Join(ws, ".vscode"), 0o755))
			must(t, os.Chown(filepath.Join(ws, ".vscode"), wsUID, wsGID))
		}, ".vscode/tasks.json"},
	} {
		before := rt5Settled(t, r)
		// Put the pool's container through a plain write first: it is the
		// given-back one from now on.
		if err := rt5Write(ctx, r, filepath.Join(ws, "plain"), []byte(step.name)); err != nil {
			t.Fatal(err)
		}
		step.create()
		res, err := runIn(t, r, sandbox.Spec{Shell: "mkdir -p $(dirname " + step.rel + ") 2>/dev/null; echo pwned >> " + step.rel + " && echo WROTE", Timeout: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if strings.Contains(string(res.Stdout), "WROTE") {
			t.Errorf("%s: a command wrote %s through a container with stale mounts (%.12s)", step.name, step.rel, res.ContainerID)
		}
		if before[res.ContainerID] {
			t.Errorf("%s: the command ran in %.12s, made before the protected path existed", step.name, res.ContainerID)
		}
	}
	rt5Settled(t, r)
}

// TestRedteam5CommandCannotReachPoolInit: while writes go through the
// read-write pool's container, a command in another container looks for
// any other init in /proc. It must see only its own, and the writes and its result stay apart.
func TestRedteam5CommandCannotReachPoolInit(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt5Settled(t, r)
	stop := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			if err := rt5Write(ctx, r, filepath.Join(ws, "w", strconv.Itoa(n%20)), []byte(strconv.Itoa(n))); err != nil {
				werr <- err
				return
			}
			n++
		}
	}()
	script := `n=0; for p in /proc/[0-9]*; do c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null); case "$c" in "/.agentbox/init "*) n=$((n+1));; esac; done; echo inits=$n
echo done`
	res, err := runIn(t, r, sandbox.Spec{Shell: script, Timeout: time.Minute})
	close(stop)
	if e := <-werr; e != nil {
		t.Fatalf("writes alongside the command: %v", e)
	}
	out := string(res.Stdout)
	if err != nil || res.ExitCode != 0 || !strings.Contains(out, "inits=1\n") || !strings.HasSuffix(out, "done\n") {
		t.Fatalf("the command saw other inits or lost its result: %v exit=%d %q", err, res.ExitCode, out)
	}
	rt5Check(t, r, "after concurrent writes")
	rt5Settled(t, r)
}

// TestRedteam5CancelRacesStatus: a write's context canceled just as its
// container goes back to the pool. Were it given back while the cancel
// can still fire (the executor checked "killed" before giving it back,
// and stopped listening to the context only afterwards), the cancel's
// kill would land on the container while it waits in the pool or serves
// the next request: that request would end without its status, its
// result another call's doing. A watcher spins on the pool's count and
// cancels the moment the container reappears, while WriteFile has not
// returned yet; after a write that succeeded that way, the pools must
// hold only running containers and the next command must get its own
// result.
func TestRedteam5CancelRacesStatus(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	late := 0
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; i < 400 && time.Now().Before(deadline); i++ {
		rt5Settled(t, r)
		// Idle containers: the pools' and those kept for writes.
		idle := func() int { return r.Warm() + r.KeptForWrites() }
		n0 := idle()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		fired := make(chan bool, 1)
		go func() {
			taken := false
			for {
				select {
				case <-done:
					fired <- false
					return
				default:
				}
				n := idle()
				if n == n0-1 {
					taken = true
				} else if taken && n == n0 {
					cancel() // given back, WriteFile not returned yet
					fired <- true
					return
				}
			}
		}()
		err := rt5Write(ctx, r, filepath.Join(ws, "race"), []byte(strconv.Itoa(i)))
		close(done)
		f := <-fired
		cancel()
		if err != nil || !f {
			continue
		}
		late++
		time.Sleep(300 * time.Millisecond) // for a kill on its way to land
		for id, running := range rt5Settled(t, r) {
			if !running {
				t.Fatalf("iteration %d: container %.12s was killed by a cancel after it went back to the pool", i, id)
			}
		}
		rt5Check(t, r, "after a write canceled as its container went back")
	}
	t.Logf("%d writes canceled after their container went back", late)
	if late == 0 {
		t.Fatal("the cancel never came after the give-back: the attack did not happen")
	}
}

// TestRedteam5StaleViewAfterReuse: a given-back container has walked the
// directories of its earlier writes. Under gVisor the Sentry caches what
// it walked; were that view stale, a later write in the same container
// would follow a directory that has since moved (here, by a command in
// another container: simulated on the host) into what is now a protected
// path deeper than the root (p/.cargo, which no read-only mount covers
// and the host-side matcher judges by the path the write names). The
// write must land where its path names now, never in the moved
// directory.
func TestRedteam5StaleViewAfterReuse(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt5Settled(t, r)
	own := func(p string) {
		t.Helper()
		must(t, os.Lchown(filepath.Join(ws, p), wsUID, wsGID))
	}
	for i := range 5 { // the container walks d
		if err := rt5Write(ctx, r, filepath.Join(ws, "d", "a"+strconv.Itoa(i)), []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Mkdir(filepath.Join(ws, "p"), 0o755))
	own("p")
	must(t, os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "p", ".cargo")))
	must(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	own("d")
	err := rt5Write(ctx, r, filepath.Join(ws, "d", "config.toml"), []byte("[build]\nrustc-wrapper = \"/tmp/x\"\n"))
	if _, serr := os.Lstat(filepath.Join(ws, "p", ".cargo", "config.toml")); serr == nil {
		t.Fatalf("a write to d/config.toml landed in p/.cargo/config.toml (a stale view of d in the reused container); write err %v", err)
	}
	if err != nil {
		t.Fatalf("write to the new d: %v", err)
	}
	if _, serr := os.Lstat(filepath.Join(ws, "d", "config.toml")); serr != nil {
		t.Fatalf("the write did not land in the new d: %v", serr)
	}
	// And a symlink where the walked directory was.
	must(t, os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "d2")))
	must(t, os.Symlink("p/.cargo", filepath.Join(ws, "d")))
	own("d")
	if err := rt5Write(ctx, r, filepath.Join(ws, "d", "x.toml"), []byte("x")); err == nil {
		t.Error("a write through a symlink that replaced a walked directory succeeded")
	}
	for _, p := range []string{"p/.cargo/x.toml", "d2/x.toml"} {
		if _, serr := os.Lstat(filepath.Join(ws, p)); serr == nil {
			t.Errorf("a write to d/x.toml landed in %s", p)
		}
	}
	rt5Check(t, r, "after writes in a changed tree")
	rt5Settled(t, r)
}

// TestRedteam5DaemonNeverServesAgain: a command leaves a daemon behind
// that rewrites every file named w* in the workspace. Were its
// container ever given back (or the daemon left alive), the writes that
// follow would be overwritten by it; each must keep its content, and
// the command's container must be gone.
func TestRedteam5DaemonNeverServesAgain(t *testing.T) {
	r, ws := newRunner(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt5Settled(t, r)
	res, err := runIn(t, r, sandbox.Spec{Shell: "setsid sh -c 'while :; do for f in w*; do [ -f \"$f\" ] && echo pwned > \"$f\"; done; sleep 0.01; done' </dev/null >/dev/null 2>&1 & sleep 0.2; exit 0", Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("daemon command: %v %+v", err, res)
	}
	for i := range 20 {
		if err := rt5Write(ctx, r, filepath.Join(ws, "w"+strconv.Itoa(i)), []byte("ok")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	for i := range 20 {
		if b, _ := os.ReadFile(filepath.Join(ws, "w"+strconv.Itoa(i))); string(b) != "ok" {
			t.Fatalf("w%d holds %q: the command's daemon outlived its call", i, b)
		}
	}
	gone := false
	for range 100 {
		if _, ok := rt5Containers(t, r)[res.ContainerID]; !ok {
			gone = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !gone {
		t.Errorf("the daemon command's container %.12s still exists", res.ContainerID)
	}
	c := rt5Check(t, r, "after a daemon command")
	if c.ContainerID == res.ContainerID {
		t.Fatalf("a command ran in %.12s, where an earlier command ran", c.ContainerID)
	}
	rt5Settled(t, r)
}
