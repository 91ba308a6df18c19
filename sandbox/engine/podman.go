package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/config"
)

// Podman as the engine (sandbox.backend: podman).
//
// Podman serves the Docker Engine API with `podman system service`. The
// candidates are $DOCKER_HOST, engine.host, Podman's rootful and rootless
// sockets, then agentbox's own service under the state directory, which
// `agentbox engine start` runs as root (installing Debian's podman when
// missing). Its containers.conf sets default ulimits Podman can apply:
// Podman's own default (nofile 1048576) cannot be raised on these machines
// and every container start fails with "error setting rlimit type 7".

// podmanPaths are the files of agentbox's private Podman service.
type podmanPathSet struct {
	Dir     string // <state>/engine/podman
	Conf    string // containers.conf (CONTAINERS_CONF)
	Log     string
	PIDFile string
	Socket  string
}

func podmanPaths(stateDir string) podmanPathSet {
	p := privatePaths(stateDir)
	dir := filepath.Join(p.Dir, "podman")
	return podmanPathSet{
		Dir:     dir,
		Conf:    filepath.Join(dir, "containers.conf"),
		Log:     filepath.Join(dir, "podman.log"),
		PIDFile: filepath.Join(p.Run, "podman.pid"),
		Socket:  filepath.Join(p.Run, "podman.sock"),
	}
}

// containersConf keeps Podman's default ulimits within what this kernel
// lets a container have; agentbox sets its own per container on top.
const containersConf = `# written by agentbox engine start
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
`

// startPodman returns the Podman service Connect finds or starts
// agentbox's own.
func startPodman(ctx context.Context, cfg *config.Config, log *slog.Logger) (Info, error) {
	if cli, info, err := Connect(ctx, cfg); err == nil {
		cli.Close()
		return info, nil
	} else if !errors.Is(err, ErrNoEngine) {
		return Info{}, err
	}
	if os.Geteuid() != 0 {
		return Info{}, fmt.Errorf("%w, and only root can start agentbox's Podman service: run `sudo agentbox engine start`, or start one yourself (`systemctl --user start podman.socket`) and set DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock", ErrNoEngine)
	}
	podman, err := lookSbin("podman")
	if err != nil {
		if !cfg.Engine.AutoInstall {
			return Info{}, fmt.Errorf("%w and podman is not installed: install it with `apt-get install -y podman` (engine.auto_install is off)", ErrNoEngine)
		}
		log.Info("podman is missing; installing Debian's podman")
		if err := InstallPackages(ctx, "podman"); err != nil {
			return Info{}, fmt.Errorf("installing podman: %w; install it by hand with `apt-get install -y podman`", err)
		}
		if podman, err = lookSbin("podman"); err != nil {
			return Info{}, err
		}
	}
	pp := podmanPaths(cfg.StateDir)
	p := privatePaths(cfg.StateDir)
	unlock, err := lockStart(ctx, p)
	if err != nil {
		return Info{}, err
	}
	defer unlock()
	if cli, info, err := Connect(ctx, cfg); err == nil {
		cli.Close()
		return info, nil
	}
	if err := makeEngineDirs(p, pp.Dir); err != nil {
		return Info{}, fmt.Errorf("podman service: %w", err)
	}
	if err := os.WriteFile(pp.Conf, []byte(containersConf), 0o600); err != nil {
		return Info{}, fmt.Errorf("podman service: %w", err)
	}
	_ = os.Remove(pp.Socket)
	logf, err := os.OpenFile(pp.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return Info{}, fmt.Errorf("podman service log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== agentbox: starting %s system service at %s\n", podman, time.Now().UTC().Format(time.RFC3339))
	cmd := exec.Command(podman, "system", "service", "--time=0", "unix://"+pp.Socket)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+pp.Conf, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Info{}, fmt.Errorf("starting podman: %w", err)
	}
	pr := &process{p: cmd.Process, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		pr.exited <- cmd.Wait()
		close(pr.done)
	}()
	if err := os.WriteFile(pp.PIDFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		pr.kill()
		return Info{}, err
	}
	log.Info("starting private Podman service", "podman", podman, "socket", pp.Socket, "log", pp.Log)
	info, err := waitSocket(ctx, candidate{host: "unix://" + pp.Socket, source: SourcePrivate}, pp.Log, cfg.Engine.StartTimeout, pr.exited)
	if err != nil {
		pr.kill()
		return Info{}, err
	}
	info.Backend = BackendPodman
	return info, nil
}

// waitSocket polls a unix socket candidate until its engine answers.
func waitSocket(ctx context.Context, c candidate, logPath string, timeout time.Duration, exited <-chan error) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sock := strings.TrimPrefix(c.host, "unix://")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(sock); err == nil {
			if cli, info, err := probe(ctx, c); err == nil {
				cli.Close()
				return info, nil
			}
		}
		select {
		case err := <-exited:
			return Info{}, fmt.Errorf("engine exited (%v) before answering; end of %s:\n%s", err, logPath, logTail(logPath))
		case <-ctx.Done():
			return Info{}, fmt.Errorf("engine did not answer within %s (%v); end of %s:\n%s", timeout, context.Cause(ctx), logPath, logTail(logPath))
		case <-tick.C:
		}
	}
}

// stopPodman stops agentbox's Podman service when it runs.
func stopPodman(ctx context.Context, cfg *config.Config) error {
	pp := podmanPaths(cfg.StateDir)
	b, err := os.ReadFile(pp.PIDFile)
	if err != nil {
		return ErrNotRunning
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !alive(pid) {
		return ErrNotRunning
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "unix://"+pp.Socket) {
		return ErrNotRunning
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping the Podman service (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = os.Remove(pp.PIDFile)
	return nil
}
