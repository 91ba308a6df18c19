package docker

// The reaper: a companion process that outlives its executor and removes
// the executor's containers when the executor dies without Close.
//
// Under runc the container's init kills the command when the executor's
// attach stream ends. Under gVisor a command can SIGSTOP init (runsc
// delivers SIGSTOP and SIGKILL to PID 1 from inside; Linux never does),
// and a stopped init kills nothing: a SIGKILLed executor would leave the
// command running, writing into the workspace unjournaled. So a Runner
// under gVisor starts the reaper: the same binary re-executed
// (/proc/self/exe) with AGENTBOX_REAPER=1, which this package's init
// handles before anything else, so it works in any binary that links the
// package, test binaries included. The reaper holds the read end of a
// pipe whose write end only the executor holds (close-on-exec): EOF on
// it means the executor is gone, whatever killed it. It then SIGKILLs and
// force-removes every container labeled with that executor's id (and no
// other), twice a second apart to catch a creation in flight, and exits.
// Close writes one byte before closing the pipe when its own removals
// succeeded (a clean close: one sweep, which finds nothing) and waits for
// the reaper to exit.
//
// The reaper runs in its own process group, so a signal to the
// executor's group (Ctrl-C, kill -9 -PGID) leaves it to do its work; it
// ignores SIGINT, SIGHUP and SIGQUIT. Killing the reaper itself as well
// as the executor (both pids, or their whole cgroup) reopens the hole
// until the next agentbox process reaps the containers (Runner.Reap).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/sandbox/engine"
)

// reaperEnv, set to "1", turns the process into a reaper (init below).
const reaperEnv = "AGENTBOX_REAPER"

// reaperReady is what the reaper writes on stdout once it reaches the
// engine.
const reaperReady = "ready\n"

func init() {
	if os.Getenv(reaperEnv) != "1" {
		return
	}
	os.Exit(reaperMain(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// reaperArgs checks the reaper's arguments: argv[0], the engine's
// address (local) and the executor id (32 lowercase hex digits, as New
// makes them).
func reaperArgs(args []string) (host, id string, err error) {
	if len(args) != 3 {
		return "", "", fmt.Errorf("usage: %s ENGINE-HOST EXECUTOR-ID (with %s=1)", "agentbox-reaper", reaperEnv)
	}
	host, id = args[1], args[2]
	if host == "" || engine.IsRemote(host) {
		return "", "", fmt.Errorf("engine host %q is not local", host)
	}
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("executor id %q is not 32 lowercase hex digits", id)
	}
	return host, id, nil
}

// reaperMain is the reaper's whole life; it returns the exit status.
func reaperMain(args []string, pipe io.Reader, ready io.Writer, stderr io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	host, id, err := reaperArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "agentbox reaper:", err)
		return 2
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		fmt.Fprintln(stderr, "agentbox reaper:", err)
		return 1
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err = cli.Ping(pctx)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "agentbox reaper:", err)
		return 1
	}
	if _, err := io.WriteString(ready, reaperReady); err != nil {
		return 1
	}
	// Block until the executor closes the pipe or dies.
	n, _ := io.Copy(io.Discard, pipe)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = sweepExecutor(ctx, cli, id)
	if n == 0 {
		// The executor died: a create or start it sent may still land.
		time.Sleep(time.Second)
		err = errors.Join(err, sweepExecutor(ctx, cli, id))
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentbox reaper:", err)
		return 1
	}
	return 0
}

// sweepExecutor SIGKILLs and force-removes every container labeled with
// executor id. A removal already in progress (Conflict) is no error.
func sweepExecutor(ctx context.Context, cli *client.Client, id string) error {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelExecutor+"="+id))})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, c := range list {
		if c.Labels[LabelExecutor] != id {
			continue
		}
		wg.Add(1)
		go func(cid string) {
			defer wg.Done()
			_ = cli.ContainerKill(ctx, cid, "KILL")
			if err := cli.ContainerRemove(ctx, cid, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(c.ID)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reaper is the executor's handle on its reaper.
type reaper struct {
	cmd  *exec.Cmd
	pipe *os.File // write end; the reaper sees EOF when it closes
	done chan struct{}
}

// startReaper starts the reaper for executor id on engine host and waits
// until it has reached the engine.
func startReaper(host, id string) (*reaper, error) {
	pr, pw, err := os.Pipe() // close-on-exec: no other child inherits pw
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{"agentbox-reaper", host, id},
		Env:         append(os.Environ(), reaperEnv+"=1"),
		Dir:         "/",
		Stdin:       pr,
		Stdout:      outW,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	pr.Close()
	outW.Close()
	if err != nil {
		pw.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	rp := &reaper{cmd: cmd, pipe: pw, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(rp.done) }()
	_ = outR.SetReadDeadline(time.Now().Add(45 * time.Second))
	line, err := bufio.NewReader(outR).ReadString('\n')
	outR.Close()
	if err != nil || line != reaperReady {
		pw.Close()
		_ = cmd.Process.Kill()
		<-rp.done
		return nil, fmt.Errorf("the reaper did not start (%q): %v", line, err)
	}
	return rp, nil
}

// stop closes the pipe, telling the reaper whether Close removed
// everything (clean: one sweep) or not (two, as after a death), and waits
// for it to exit or for ctx to end (the reaper then finishes on its own,
// within its two-minute bound).
func (rp *reaper) stop(ctx context.Context, clean bool) {
	if clean {
		_, _ = rp.pipe.Write([]byte{1})
	}
	rp.pipe.Close()
	select {
	case <-rp.done:
	case <-ctx.Done():
	}
}
