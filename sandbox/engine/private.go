package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
)

// maxSocketPath is the longest path a unix socket address can hold
// (sun_path is 108 bytes including the terminating NUL).
const maxSocketPath = 107

// longestRunSuffix is the longest socket dockerd and its managed containerd
// create below the run directory; the run directory must leave room for it.
const longestRunSuffix = "/exec/containerd/containerd-debug.sock"

// paths are the private engine's files. Data and logs live under the state
// dir; the socket, pid file and exec root live in a run directory that is
// also under the state dir unless that path is too long for a unix socket.
type paths struct {
	Dir      string // <state>/engine
	DataRoot string // dockerd --data-root
	Log      string // dockerd's stdout and stderr
	Run      string // holds the socket, pid file and exec root
	ExecRoot string // dockerd --exec-root
	Socket   string // dockerd -H unix://...
	PIDFile  string // dockerd --pidfile
	Config   string // dockerd --config-file (runtime.go)
}

// shortRunBase is where the run directory goes when the state dir's path is
// too long. It must be the same for every user so that discovery finds it.
var shortRunBase = func() string {
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
		return "/run"
	}
	return os.TempDir()
}

func privatePaths(stateDir string) paths {
	dir := filepath.Join(stateDir, "engine")
	run := filepath.Join(dir, "run")
	if len(run)+len(longestRunSuffix) > maxSocketPath {
		sum := sha256.Sum256([]byte(dir))
		run = filepath.Join(shortRunBase(), "agentbox-"+hex.EncodeToString(sum[:6]))
	}
	return paths{
		Dir:      dir,
		DataRoot: filepath.Join(dir, "data"),
		Log:      filepath.Join(dir, "dockerd.log"),
		Run:      run,
		ExecRoot: filepath.Join(run, "exec"),
		Socket:   filepath.Join(run, "docker.sock"),
		PIDFile:  filepath.Join(run, "docker.pid"),
		Config:   filepath.Join(dir, "daemon.json"),
	}
}

// dockerdArgs are the private engine's flags: its own roots, socket and pid
// file, and hands off the host's network configuration.
func dockerdArgs(p paths) []string {
	return []string{
		"--data-root", p.DataRoot,
		"--exec-root", p.ExecRoot,
		"-H", "unix://" + p.Socket,
		"--pidfile", p.PIDFile,
		// Its own daemon.json (extra runtimes), never the host's.
		"--config-file", p.Config,
		"--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
		// Keep apart from any other dockerd sharing a system containerd.
		"--containerd-namespace", "agentbox",
		"--containerd-plugins-namespace", "agentbox-plugins",
	}
}

// Start returns the engine Connect finds; when none answers it starts the
// private dockerd and waits until it answers. It is idempotent. When dockerd
// is missing and we are root it installs Debian's docker.io first (unless
// engine.auto_install is off). log may be nil.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger) (Info, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sandbox.Backend == BackendPodman {
		return startPodman(ctx, cfg, log)
	}
	if err := ensureRuntimeInstalled(ctx, cfg, log); err != nil {
		return Info{}, err
	}
	if cli, info, err := Connect(ctx, cfg); err == nil {
		defer cli.Close()
		log.Debug("engine already answers", "host", info.Host, "source", info.Source)
		if err := addRuntimeLive(ctx, cli, cfg, info); err != nil {
			return Info{}, err
		}
		return info, nil
	} else if !errors.Is(err, ErrNoEngine) {
		return Info{}, err
	}
	if os.Geteuid() != 0 {
		return Info{}, fmt.Errorf("%w, and only root can start agentbox's private engine: run `sudo agentbox engine start --state-dir %s` (its socket belongs to group docker: join it with `sudo usermod -aG docker $USER`), or start Docker or Podman yourself and set DOCKER_HOST (rootless Podman: `systemctl --user start podman.socket` and DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock)", ErrNoEngine, cfg.StateDir)
	}
	dockerd, err := findDockerd(ctx, cfg, log)
	if err != nil {
		return Info{}, err
	}
	p := privatePaths(cfg.StateDir)
	unlock, err := lockStart(ctx, p)
	if err != nil {
		return Info{}, err
	}
	defer unlock()
	// Installing docker.io may have started its own engine, or another
	// `engine start` may have won the lock first.
	if cli, info, err := Connect(ctx, cfg); err == nil {
		defer cli.Close()
		return info, addRuntimeLive(ctx, cli, cfg, info)
	}
	info, err := startPrivate(ctx, dockerd, p, cfg.Engine.StartTimeout, log)
	if err != nil {
		return Info{}, err
	}
	log.Info("private engine answers", "host", info.Host, "version", info.Version)
	return info, nil
}

// startPrivate launches dockerd (unless ours is already running) and waits
// for it to answer. On failure it kills what it launched.
func startPrivate(ctx context.Context, dockerd string, p paths, timeout time.Duration, log *slog.Logger) (Info, error) {
	if err := makeEngineDirs(p, p.Dir, p.DataRoot); err != nil {
		return Info{}, fmt.Errorf("private engine: %w", err)
	}
	var proc *process
	if pid, ok := ourPID(p); ok {
		// Already starting (or hung): wait for it rather than start another.
		log.Info("private engine process already running; waiting for it", "pid", pid)
	} else {
		_ = os.Remove(p.Socket) // stale from a crash
		if err := writeDaemonConfig(p.Config, daemonConfig{Runtimes: installedRuntimes()}); err != nil {
			return Info{}, err
		}
		var err error
		if proc, err = launch(dockerd, p); err != nil {
			return Info{}, err
		}
		log.Info("starting private engine", "dockerd", dockerd, "socket", p.Socket, "log", p.Log)
	}
	var exited <-chan error
	if proc != nil {
		exited = proc.exited
	}
	info, err := waitReady(ctx, p, timeout, exited)
	if err != nil && proc != nil {
		proc.kill()
	}
	return info, err
}

// makeEngineDirs creates dirs and p.Run (0700). A run directory outside
// the state dir sits in a shared base (/run, or the temporary directory)
// under a name anyone can compute: a directory planted there first would
// hold the engine's socket and pid file where its owner could replace
// them, so it must be a private directory of this uid that nobody else
// can swap. (Under the state dir it is as private as the state dir.)
func makeEngineDirs(p paths, dirs ...string) error {
	for _, d := range append(dirs, p.Run) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if config.Within(p.Run, p.Dir) {
		return nil
	}
	return frontdoor.CheckPrivateDir(p.Run)
}

// lockStart serialises starts of the same private engine across
// processes with an exclusive flock on a file in its directory.
func lockStart(ctx context.Context, p paths) (unlock func(), err error) {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("private engine: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(p.Dir, "start.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("private engine lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("private engine lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another `agentbox engine start`: %w", context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findDockerd locates dockerd, installing docker.io if allowed.
func findDockerd(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, error) {
	if p, err := lookSbin("dockerd"); err == nil {
		return p, nil
	}
	if !cfg.Engine.AutoInstall {
		return "", fmt.Errorf("%w and dockerd is not installed: install it with `apt-get install -y docker.io` (engine.auto_install is off)", ErrNoEngine)
	}
	log.Info("dockerd is missing; installing Debian's docker.io")
	if err := InstallPackages(ctx, "docker.io"); err != nil {
		return "", fmt.Errorf("installing docker.io: %w; install it by hand with `apt-get install -y docker.io`", err)
	}
	return lookSbin("dockerd")
}

// lookSbin finds a program in PATH or the usual system directories.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// InstallPackages installs Debian packages the bootstrap needs (the
// engine, the static busybox for the minimal image): apt-get update, then
// a non-interactive install without recommends. The caller checks that it
// runs as root; the error carries the tail of apt-get's output.
func InstallPackages(ctx context.Context, pkgs ...string) error {
	apt, err := lookSbin("apt-get")
	if err != nil {
		return err
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update"}, append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", args[0], err, tail(out.Bytes(), 800))
		}
	}
	return nil
}

// process is a dockerd we launched.
type process struct {
	p      *os.Process
	exited chan error // receives the exit status once
	done   chan struct{}
}

// kill stops a launched dockerd that did not come up: SIGTERM, then
// SIGKILL after a grace period.
func (pr *process) kill() {
	_ = pr.p.Signal(syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(10 * time.Second):
		_ = pr.p.Kill()
		<-pr.done
	}
}

// launch starts dockerd detached (own session, output to the log file).
func launch(dockerd string, p paths) (*process, error) {
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("private engine log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== agentbox: starting %s at %s\n", dockerd, time.Now().UTC().Format(time.RFC3339))
	cmd := exec.Command(dockerd, dockerdArgs(p)...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting dockerd: %w", err)
	}
	pr := &process{p: cmd.Process, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		pr.exited <- cmd.Wait()
		close(pr.done)
	}()
	return pr, nil
}

// waitReady polls the private socket until the engine answers.
func waitReady(ctx context.Context, p paths, timeout time.Duration, exited <-chan error) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := candidate{host: "unix://" + p.Socket, source: SourcePrivate}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(p.Socket); err == nil {
			if cli, info, err := probe(ctx, c); err == nil {
				cli.Close()
				return info, nil
			}
		}
		select {
		case err := <-exited:
			return Info{}, fmt.Errorf("private engine exited (%v) before answering; end of %s:\n%s", err, p.Log, logTail(p.Log))
		case <-ctx.Done():
			return Info{}, fmt.Errorf("private engine did not answer within %s (%v); end of %s:\n%s", timeout, context.Cause(ctx), p.Log, logTail(p.Log))
		case <-tick.C:
		}
	}
}

// Stop stops the private engine, if it runs, and waits for it to exit. It
// never touches an engine agentbox did not start. It returns an error
// wrapping ErrNotRunning when there is nothing to stop.
func Stop(ctx context.Context, cfg *config.Config) error {
	if cfg.Sandbox.Backend == BackendPodman {
		return stopPodman(ctx, cfg)
	}
	p := privatePaths(cfg.StateDir)
	pid, ok := ourPID(p)
	if !ok {
		return ErrNotRunning
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping private engine (pid %d): %w", pid, err)
	}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopping private engine: %w", context.Cause(ctx))
		case <-deadline.C:
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case <-tick.C:
		}
	}
	// A short run dir outside the state dir is ours alone; leave nothing
	// behind in /run.
	if !config.Within(p.Run, p.Dir) {
		_ = os.RemoveAll(p.Run)
	}
	return nil
}

// ourPID reads the private engine's pid file and returns the pid if that
// process is alive and is dockerd serving our socket.
func ourPID(p paths) (int, bool) {
	b, err := os.ReadFile(p.PIDFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !alive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, false
	}
	args := strings.Split(string(cmdline), "\x00")
	if !strings.HasSuffix(args[0], "dockerd") || !strings.Contains(string(cmdline), "unix://"+p.Socket+"\x00") {
		return 0, false
	}
	return pid, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 4096 {
		_, _ = f.Seek(-4096, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return tail(b, 2000)
}

// tail returns at most the last n bytes of b, starting at a line boundary
// when it had to cut.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

// Paths of the private engine, for status output and tests.
type Paths struct {
	Socket  string `json:"socket"`
	DataDir string `json:"data_root"`
	Log     string `json:"log"`
}

// PrivatePaths says where the private engine of this configuration keeps
// its socket, data and log.
func PrivatePaths(cfg *config.Config) Paths {
	p := privatePaths(cfg.StateDir)
	return Paths{Socket: p.Socket, DataDir: p.DataRoot, Log: p.Log}
}
