package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// InitPath is where the agentbox binary is mounted inside every container.
const InitPath = "/.agentbox/init"

// readyTimeout bounds a container's way from create to its Ready frame.
const readyTimeout = 60 * time.Second

// warm is a started container whose init has said Ready and waits for
// its one request on the attached stream.
type warm struct {
	id     string
	conn   net.Conn
	hj     types.HijackedResponse
	frames io.Reader // init's stdout, demultiplexed
	fp     string    // protected-paths fingerprint at creation
	bash   bool
	ro     bool // the workspace is mounted read-only
}

// containerSpec builds the hardened create request. Everything that
// varies per command travels in the request frame instead, so the same
// spec serves every warm container of a workspace.
func (r *Runner) containerSpec(mounts []mount.Mount, expect []initproc.ExpectedMount) (*container.Config, *container.HostConfig) {
	c := r.cfg
	cfg := &container.Config{
		Image:           r.image,
		User:            r.user,
		Entrypoint:      []string{InitPath, "init"},
		Cmd:             []string{"--expect", initproc.EncodeExpect(expect)},
		Env:             []string{"PATH=" + r.path, "HOME=" + sandbox.Home},
		WorkingDir:      "/",
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		NetworkDisabled: true,
		Labels:          r.labels(),
	}
	mem := c.EffectiveMemoryMB() << 20
	pids := c.PidsLimit
	host := &container.HostConfig{
		Runtime:        r.runtime,
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "rw,exec,nosuid,nodev,mode=1777,size=" + strconv.FormatInt(c.TmpSizeMB, 10) + "m"},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", r.seccompOption()},
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		Mounts:         mounts,
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			NanoCPUs:   int64(c.EffectiveCPUs() * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: c.NoFile, Hard: c.NoFile},
				{Name: "nproc", Soft: c.NProc, Hard: c.NProc},
				{Name: "fsize", Soft: c.FileSizeMB << 20, Hard: c.FileSizeMB << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if r.gvisor {
		gvisorResources(&host.Resources, c)
	}
	return cfg, host
}

// createTimeout bounds a container create, which runs to its end even
// when the start is canceled (see start).
const createTimeout = time.Minute

// seq numbers container names within this executor.
var seq atomic.Uint64

// start creates, attaches and starts one container and waits for its init
// to say Ready. On failure the container is removed. ro mounts the
// workspace read-only.
//
// Bind sources are opened and checked once, pinned where this process
// may mount (pin.go) and unpinned as soon as the container has started;
// init then verifies what got mounted against the same table before it
// says Ready.
func (r *Runner) start(ctx context.Context, ro bool) (w *warm, err error) {
	ph := phaseClock{t: time.Now()}
	srcs, err := r.sources(ro)
	defer closeSources(srcs)
	if err != nil {
		r.log.Warn("refusing to start a container", "read_only", ro, "err", err)
		return nil, err
	}
	fp := fingerprintOf(r.workspaceSide(srcs))
	n := seq.Add(1)
	var pinned *pins
	if !r.noPins {
		if pinned, err = pin(filepath.Join(r.pinBase, fmt.Sprintf("%d-%s-%d", os.Getpid(), r.pidStart, n)), srcs, r.log.Warn); err != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
	}
	defer func() { pinned.release() }()
	ph.lap("sources")
	name := fmt.Sprintf("agentbox-%s-%d", r.id[:8], n)
	expect := expected(srcs)
	if r.gvisor {
		// Identities are virtual inside gVisor: compared on the host,
		// through the gofer, below (gofer.go).
		for i := range expect {
			expect[i].HostID = true
		}
	}
	cfg, host := r.containerSpec(dockerMounts(srcs), expect)
	// The create is never abandoned half-way when ctx ends: the engine
	// finishes it anyway, leaving a container whose id nobody learns
	// (Podman even recreates the bind sources we unpin meanwhile, as
	// empty directories). It is waited for and removed instead.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	created, err := r.cli.ContainerCreate(cctx, cfg, host, nil, nil, name)
	ccancel()
	if err == nil && ctx.Err() != nil {
		r.remove(created.ID)
		err = context.Cause(ctx)
	}
	if err != nil {
		r.log.Warn("creating a container", "read_only", ro, "err", err)
		return nil, fmt.Errorf("%w: creating container: %w", sandbox.ErrUnavailable, err)
	}
	id := created.ID
	ph.lap("create")
	defer func() {
		if err != nil {
			r.log.Warn("container did not start", "container", shortID(id), "read_only", ro, "err", err)
			r.remove(id)
		}
	}()
	hj, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("%w: attaching to container: %w", sandbox.ErrUnavailable, err)
	}
	defer func() {
		if err != nil {
			hj.Close()
		}
	}()
	ph.lap("attach")
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("%w: starting container: %w", sandbox.ErrUnavailable, err)
	}
	ph.lap("start")
	// The runtime has made the container's mounts: its copies do not
	// need the pins any more.
	pinned.release()
	pinned = nil
	ph.lap("unpin")
	frames := &demux{r: hj.Reader, diag: func(p []byte) {
		r.log.Debug("init stderr", "container", shortID(id), "text", string(p))
	}}
	hj.Conn.SetReadDeadline(time.Now().Add(readyTimeout))
	stop := context.AfterFunc(ctx, func() { hj.Conn.SetReadDeadline(time.Unix(1, 0)) })
	t, p, err := initproc.ReadFrame(frames)
	stop()
	if err == nil && t == initproc.Fatal {
		r.log.Warn("container refused by its init", "container", shortID(id), "read_only", ro, "reason", string(p))
		return nil, fmt.Errorf("%w: container refused by its init: %s", sandbox.ErrUnsafeWorkspace, p)
	}
	if err != nil || t != initproc.Ready {
		if err == nil {
			err = fmt.Errorf("unexpected frame %q", t)
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("%w: container init did not start: %w", sandbox.ErrUnavailable, err)
	}
	hj.Conn.SetReadDeadline(time.Time{})
	ph.lap("ready")
	var ri initproc.ReadyInfo
	if err := json.Unmarshal(p, &ri); err != nil || ri.Proto != initproc.Proto {
		return nil, fmt.Errorf("%w: container init speaks another protocol (%s); rebuild agentbox", sandbox.ErrUnavailable, p)
	}
	if r.gvisor {
		if err := r.verifyGofer(ctx, id, expect); err != nil {
			r.log.Warn("container refused by the host-side mount check", "container", shortID(id), "read_only", ro, "err", err)
			return nil, err
		}
	}
	r.log.Debug("container ready", append([]any{"container", shortID(id), "read_only", ro}, ph.attrs...)...)
	return &warm{id: id, conn: hj.Conn, hj: hj, frames: frames, fp: fp, bash: ri.Bash, ro: ro}, nil
}

// phaseClock times the phases of a container's life for the debug log
// ("container ready", "container removed": one duration attribute per
// phase; `agentbox bench sandbox --profile` summarises them).
type phaseClock struct {
	t     time.Time
	attrs []any
}

// lap records the time since the last lap as phase.
func (c *phaseClock) lap(phase string) {
	now := time.Now()
	c.attrs = append(c.attrs, slog.Duration(phase, now.Sub(c.t)))
	c.t = now
}

// remove kills and removes a container in the background.
func (r *Runner) remove(id string) {
	r.bg.Add(1)
	r.removing.Add(1)
	go func() {
		defer r.bg.Done()
		defer r.removing.Add(-1)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ph := phaseClock{t: time.Now()}
		// Podman refuses a forced removal of a container whose init is
		// exiting at that moment ("could not be stopped: container state
		// improper"); once it has stopped, the removal works. Without a
		// retry the container would stay until Close.
		var err error
		for delay := 50 * time.Millisecond; ; delay *= 2 {
			err = r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
			if err == nil || cerrdefs.IsNotFound(err) || delay > 2*time.Second {
				break
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
		}
		if err != nil {
			r.log.Warn("removing container", "container", shortID(id), "err", err)
			return
		}
		ph.lap("remove")
		r.log.Debug("container removed", append([]any{"container", shortID(id)}, ph.attrs...)...)
	}()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// demux reads the stdout payload of Docker's multiplexed attach stream
// (8-byte headers: stream, 3 zero bytes, big-endian length) and hands
// stderr payloads to diag.
type demux struct {
	r      *bufio.Reader
	remain int
	diag   func([]byte)
}

func (d *demux) Read(p []byte) (int, error) {
	for d.remain == 0 {
		var h [8]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return 0, err
		}
		n := int(binary.BigEndian.Uint32(h[4:]))
		switch h[0] {
		case 1:
			d.remain = n
		case 2, 0:
			buf := make([]byte, n)
			if _, err := io.ReadFull(d.r, buf); err != nil {
				return 0, err
			}
			if d.diag != nil && n > 0 {
				d.diag(buf)
			}
		default:
			return 0, fmt.Errorf("attach stream: bad header %x", h)
		}
	}
	if len(p) > d.remain {
		p = p[:d.remain]
	}
	n, err := d.r.Read(p)
	d.remain -= n
	if err == io.EOF && d.remain > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// seccompOption is the runner's seccomp security option; a Runner built
// without one (never by New) still gets the inline profile, never none.
func (r *Runner) seccompOption() string {
	if r.seccomp == "" {
		return seccompOpt()
	}
	return r.seccomp
}
