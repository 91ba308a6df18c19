// Package docker is the Docker Engine backend of [sandbox.Runner]: every
// command runs in a fresh, hardened container that is removed afterwards.
//
// Containers are started ahead of time (a warm pool of config
// sandbox.pool_size per [Runner]) with the agentbox binary itself,
// bind-mounted read-only, as PID 1 (`agentbox init`, package
// sandbox/initproc). Run hands one request to a warm container over its
// already-attached stream, reads framed output and the exit status back,
// then removes the container in the background while the pool refills.
// WriteFile hands a write request the same way; init writes the file
// itself (no process starts), and since nothing of the agent's ran there
// the container is kept for the next writes (up to two such containers),
// or goes back to the pool for the next request (write.go). A gated write
// waits for its gate before init may rename the file into place
// (docs/gated-writes.md).
//
// Every container gets: no network; a read-only root; a private /tmp
// tmpfs with a size cap (HOME lives there); all capabilities dropped;
// no-new-privileges; Docker's default seccomp profile; pids, memory (swap
// included) and CPU limits; nofile, nproc and fsize ulimits; the
// workspace owner's uid:gid; a scrubbed environment; the workspace
// bind-mounted read-write at its own absolute path with the protected
// paths inside it read-only; for the host image the host's toolchain
// directories read-only. Never the Docker socket.
//
// Containers carry labels naming the executor (id, host, pid and the pid's
// start time) and the workspace. [Open] removes labeled containers whose
// executor is gone; Close removes the Runner's own. Under gVisor a Runner
// also starts a reaper process (reaper.go) that removes its containers as
// soon as it dies without Close.
//
// A *Runner is safe for concurrent use.
package docker

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
	"github.com/agentbox/agentbox/sandbox/engine"
)

// Labels on every container.
const (
	LabelExecutor  = "dev.agentbox.executor"
	LabelHost      = "dev.agentbox.host"
	LabelPID       = "dev.agentbox.pid"
	LabelPIDStart  = "dev.agentbox.pidstart"
	LabelWorkspace = "dev.agentbox.workspace"
)

// Runner runs commands in throwaway Docker containers. It implements
// sandbox.Runner.
type Runner struct {
	cli        *client.Client
	ownClient  bool
	cfg        config.Sandbox
	log        *slog.Logger
	workspace  string
	image      string
	user       string
	uid, gid   int
	initPath   string
	hostMounts []string
	path       string // PATH of every command
	id         string
	hostname   string
	pidStart   string
	seccomp    string       // the "seccomp=..." security option (seccompFor)
	wsFD       *os.File     // O_PATH descriptor of the workspace, held for the Runner's life
	pinBase    string       // root-only directory of bind-source pins (pin.go)
	inert      string       // the empty file mounted over workspace sockets (sockets.go)
	sockets    socketWalk   // finds them
	noPins     bool         // WithoutPins
	runtime    string       // OCI runtime (config sandbox.runtime; "" = engine default)
	gvisor     bool         // runtime is runsc: mount identities are checked host-side (gofer.go)
	hostUDS    bool         // gVisor lets containers connect to host unix sockets (sockets.go)
	tc         *Toolchains  // caches and identity (caches.go)
	reaper     *reaper      // under gVisor: removes the containers if this process dies (reaper.go)
	toolEnv    []string     // tc.Env()
	egress     *egressState // the proxy when network.mode is allowlist (egress.go)

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	// pools holds warm containers of both flavours: pools[0] mounts the
	// workspace read-write (with protected paths read-only), pools[1]
	// read-only (Spec.ReadOnly). Each refills on its own.
	pools    [2]*pool
	fails    atomic.Int32
	removing atomic.Int32 // background removals in flight

	fillers sync.WaitGroup
	bg      sync.WaitGroup // background removals

	mu      sync.Mutex
	closed  bool
	runs    sync.WaitGroup
	running map[string]*warm
}

var _ sandbox.Runner = (*Runner)(nil)

// The backends this package serves, opened through sandbox.Open:
// "docker" (any Docker Engine API endpoint, optionally with the runsc
// runtime) and "podman" (Podman's Docker-compatible API; engine.Connect
// finds only Podman endpoints for it).
func init() {
	sandbox.Register(engine.BackendDocker, openBackend)
	sandbox.Register(engine.BackendPodman, openBackend)
}

func openBackend(ctx context.Context, cfg *config.Config, log *slog.Logger, o sandbox.OpenOptions) (sandbox.Runner, error) {
	var opts []Option
	if o.Network.Audit != nil {
		opts = append(opts, WithEgressAudit(o.Network.Audit))
	}
	if o.Network.Approver != nil {
		opts = append(opts, withEgressApprover(o.Network.Approver, 0))
	}
	if o.EntryChanges != nil {
		opts = append(opts, WithEntryChanges(o.EntryChanges))
	}
	r, err := Open(ctx, cfg, log, opts...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ErrRemoteEngine: the engine is reached over the network, so it would
// resolve bind sources on another machine. Wrapped with
// sandbox.ErrUnavailable.
var ErrRemoteEngine = errors.New("remote engine")

// Option changes how a Runner is built.
type Option func(*options)

type options struct {
	hostMounts    []string
	hostMountsSet bool
	noPins        bool
	ownerHome     string
	ownerHomeSet  bool
	// egress.go
	egressAudit    egress.AuditFunc
	egressApprover egress.Approver
	egressTimeout  time.Duration
	egressGate     []egress.GateOption
	entries        func() (map[string]bool, bool)
}

// WithoutPins hands Docker the workspace paths of bind sources instead of
// pinned mounts, as agentbox must when it lacks the privilege to mount
// (pin.go): init's check of what got mounted is then the only guard. For
// tests of that guard, and for operators who cannot pin.
func WithoutPins() Option { return func(o *options) { o.noPins = true } }

// WithEntryChanges keeps the set of unix sockets masked in containers
// current from the workspace's entry changes instead of a walk of the
// tree at every hand-over (see sandbox.OpenOptions.EntryChanges; the walk
// remains whenever f cannot vouch).
func WithEntryChanges(f func() (map[string]bool, bool)) Option {
	return func(o *options) { o.entries = f }
}

// WithHostMounts sets the host paths bind-mounted read-only at the same
// path in every container (by default those of the host image when the
// configured image is it, none otherwise).
func WithHostMounts(paths []string) Option {
	return func(o *options) { o.hostMounts, o.hostMountsSet = paths, true }
}

// Open connects to the engine (engine.Connect), makes sure the configured
// image exists, removes containers left behind by dead executors and
// starts the warm pool. Close releases all of it.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*Runner, error) {
	// The workspace's owner first: no engine can fix that one.
	if err := sandbox.CheckOwner(filepath.Clean(cfg.Workspace), cfg.Sandbox.AllowRootWorkspace); err != nil {
		return nil, err
	}
	cli, _, err := engine.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	r, err := New(ctx, cli, cfg, log, opts...)
	if err != nil {
		cli.Close()
		return nil, err
	}
	r.ownClient = true
	return r, nil
}

// New is Open with a client the caller owns (Close leaves it open).
func New(ctx context.Context, cli *client.Client, cfg *config.Config, log *slog.Logger, opts ...Option) (*Runner, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if h := cli.DaemonHost(); engine.IsRemote(h) {
		// It would bind-mount whatever sits at the workspace's path on its
		// own machine, and it cannot see the pins under our state dir.
		return nil, fmt.Errorf("%w: %w: the engine at %s is reached over the network and cannot see this machine's workspace %s "+
			"(it would mount whatever lies at that path on its own host); use a local engine (unset DOCKER_HOST, or `agentbox engine start`)",
			sandbox.ErrUnavailable, ErrRemoteEngine, h, cfg.Workspace)
	}
	ws := filepath.Clean(cfg.Workspace)
	if err := checkWorkspace(ws, cli.DaemonHost()); err != nil {
		return nil, err
	}
	if err := sandbox.CheckOwner(ws, cfg.Sandbox.AllowRootWorkspace); err != nil {
		return nil, err
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("%w: workspace: %w", sandbox.ErrUnsafeWorkspace, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%w: workspace owner unknown", sandbox.ErrUnsafeWorkspace)
	}
	initPath, err := initBinary(cfg.Sandbox.InitBinary)
	if err != nil {
		return nil, err
	}
	if config.Within(initPath, ws) {
		// An agent could rewrite or swap a binary inside the workspace:
		// mount a private copy instead.
		if initPath, err = copyInit(initPath, filepath.Join(cfg.WorkspaceStateDir(), "init")); err != nil {
			return nil, err
		}
	}
	wsFD, err := openWorkspace(ws)
	if err != nil {
		return nil, err
	}
	if err := ensureImage(ctx, cli, cfg.Sandbox.Image, ws); err != nil {
		return nil, err
	}
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: engine version: %w", sandbox.ErrUnavailable, err)
	}
	if err := engine.CheckRuntime(ctx, cli, cfg.Sandbox.Runtime); err != nil {
		wsFD.Close()
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	gvisor := false
	var runtimes map[string]system.RuntimeWithStatus
	if rt := cfg.Sandbox.Runtime; rt != "" {
		info, err := cli.Info(ctx)
		if err != nil {
			wsFD.Close()
			return nil, fmt.Errorf("%w: engine info: %w", sandbox.ErrUnavailable, err)
		}
		runtimes = info.Runtimes
		gvisor = gvisorRuntime(rt, info.Runtimes[rt].Path)
	}
	secOpt, err := seccompFor(ver, cfg.WorkspaceStateDir(), gvisor)
	if err != nil {
		return nil, err
	}
	hm, path := imageDefaults(cfg.Sandbox.Image)
	if o.hostMountsSet {
		hm = o.hostMounts
	}
	var idb [16]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	r := &Runner{
		cli: cli, cfg: cfg.Sandbox, log: log, workspace: ws, image: cfg.Sandbox.Image,
		uid: int(st.Uid), gid: int(st.Gid), user: fmt.Sprintf("%d:%d", st.Uid, st.Gid),
		initPath: initPath, hostMounts: hm, path: path, id: hex.EncodeToString(idb[:]), hostname: host,
		pidStart: procStart(os.Getpid()), running: map[string]*warm{}, seccomp: secOpt,
		wsFD: wsFD, pinBase: filepath.Join(cfg.WorkspaceStateDir(), "pins"), noPins: o.noPins,
		runtime: cfg.Sandbox.Runtime, gvisor: gvisor,
	}
	r.sockets.feed = o.entries
	if r.inert, err = inertFile(cfg.WorkspaceStateDir()); err != nil {
		wsFD.Close()
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	r.cfg.CPUs, r.cfg.MemoryMB = cfg.Sandbox.EffectiveCPUs(), cfg.Sandbox.EffectiveMemoryMB()
	if err := r.setupToolchains(cfg, o); err != nil {
		wsFD.Close()
		return nil, err
	}
	if _, err := r.fingerprint(false); err != nil {
		wsFD.Close()
		return nil, err
	}
	if err := r.startEgress(cfg, o); err != nil {
		wsFD.Close()
		return nil, err
	}
	r.gvisorRuntime(runtimes)
	sweepPins(r.pinBase)
	if err := r.Reap(ctx); err != nil {
		log.Warn("removing containers of dead executors", "err", err)
	}
	if gvisor {
		// A command can stop init under gVisor; then only a process
		// outside the container kills it when this one dies.
		if r.reaper, err = startReaper(cli.DaemonHost(), r.id); err != nil {
			wsFD.Close()
			r.stopEgress()
			return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
	}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	n := cfg.Sandbox.PoolSize
	for i := range r.pools {
		p := &pool{ro: i == 1, ready: make(chan *warm, max(n, 1)), tokens: make(chan struct{}, max(n, 1))}
		if !p.ro && n > 0 { // pool_size 0 keeps nothing warm, for writes neither
			p.writers = make(chan *warm, writerSlots)
		}
		for range n {
			p.tokens <- struct{}{}
		}
		r.pools[i] = p
		if n > 0 {
			r.fillers.Add(1)
			go r.fill(p)
		}
	}
	return r, nil
}

// checkWorkspace refuses workspaces that would expose the system: the
// root, system directories, or a tree holding the engine's socket.
func checkWorkspace(ws, daemonHost string) error {
	if !filepath.IsAbs(ws) {
		return fmt.Errorf("%w: workspace %q is not absolute", sandbox.ErrUnsafeWorkspace, ws)
	}
	switch ws {
	case "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var", "/tmp", "/var/run", "/var/lib":
		return fmt.Errorf("%w: %s is a system directory, not a workspace", sandbox.ErrUnsafeWorkspace, ws)
	}
	for _, sock := range []string{strings.TrimPrefix(daemonHost, "unix://"), "/var/run/docker.sock", "/run/docker.sock"} {
		if !strings.HasPrefix(sock, "/") {
			continue
		}
		real := sock
		if p, err := filepath.EvalSymlinks(sock); err == nil {
			real = p
		}
		if config.Within(sock, ws) || config.Within(real, ws) {
			return fmt.Errorf("%w: the workspace %s contains the engine socket %s", sandbox.ErrUnsafeWorkspace, ws, sock)
		}
	}
	return nil
}

// initBinary resolves the binary mounted as init: configured or the
// running executable.
func initBinary(p string) (string, error) {
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("%w: locating the agentbox binary: %w", sandbox.ErrUnavailable, err)
		}
		p = exe
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: init binary: %w", sandbox.ErrUnavailable, err)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: init binary %s is not an executable file", sandbox.ErrUnavailable, real)
	}
	f, err := elf.Open(real)
	if err != nil {
		return "", fmt.Errorf("%w: init binary %s: %w", sandbox.ErrUnavailable, real, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%w: init binary %s is dynamically linked; build agentbox with CGO_ENABLED=0 (make build)", sandbox.ErrUnavailable, real)
		}
	}
	return real, nil
}

func (r *Runner) labels() map[string]string {
	return map[string]string{
		LabelExecutor:  r.id,
		LabelHost:      r.hostname,
		LabelPID:       strconv.Itoa(os.Getpid()),
		LabelPIDStart:  r.pidStart,
		LabelWorkspace: r.workspace,
	}
}

// procStart is the start time of a process (field 22 of /proc/PID/stat),
// telling a live executor from a recycled pid; "" when unknown.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Reap removes containers labeled by an executor on this host that is no
// longer running (its pid is gone or belongs to another process now).
func (r *Runner) Reap(ctx context.Context) error {
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelExecutor))})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errs []error
	var mu sync.Mutex
	for _, c := range list {
		l := c.Labels
		if l[LabelExecutor] == r.id || l[LabelHost] != r.hostname {
			continue
		}
		if pid, err := strconv.Atoi(l[LabelPID]); err == nil && pid > 0 && l[LabelPIDStart] != "" && procStart(pid) == l[LabelPIDStart] {
			continue // its executor is alive
		}
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			r.log.Info("removed container of a dead executor", "container", shortID(id))
		}(c.ID)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ID is this executor's id, as in the containers' LabelExecutor.
func (r *Runner) ID() string { return r.id }

// Close kills running commands, removes every container of this Runner
// and, when Open made it, closes the engine client.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, w := range r.running {
		go r.kill(w.id)
	}
	r.mu.Unlock()
	r.cancel()
	r.fillers.Wait()
	r.runs.Wait()
	for _, p := range r.pools {
		r.drain(p)
	}
	done := make(chan struct{})
	go func() { r.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// Sweep anything a failed removal left behind.
	var err error
	list, lerr := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelExecutor+"="+r.id))})
	if lerr != nil {
		err = lerr
	}
	for _, c := range list {
		if e := r.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); e != nil && !cerrdefs.IsNotFound(e) {
			err = errors.Join(err, e)
		}
	}
	if r.reaper != nil {
		r.reaper.stop(ctx, err == nil)
	}
	r.stopEgress()
	if r.ownClient {
		err = errors.Join(err, r.cli.Close())
	}
	if r.wsFD != nil {
		r.wsFD.Close()
	}
	return err
}

// kill SIGKILLs a container (its init, hence everything in it).
func (r *Runner) kill(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	if err := r.cli.ContainerKill(ctx, id, "KILL"); err != nil && !cerrdefs.IsNotFound(err) {
		r.log.Debug("killing container", "container", shortID(id), "err", err)
	}
}
