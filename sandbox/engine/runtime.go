package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/client"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/atomicfile"
)

// Extra OCI runtimes of the private engine.
//
// The private dockerd reads its own daemon.json (--config-file) whose
// "runtimes" section registers every known runtime that is installed.
// `agentbox engine start` with sandbox.runtime set installs the runtime's
// Debian package when missing and, when the private engine already runs
// without it, rewrites daemon.json and makes dockerd reload it (SIGHUP):
// runtimes are among the settings dockerd reloads live.

// ErrNoRuntime is wrapped when the engine cannot run the configured
// sandbox.runtime.
var ErrNoRuntime = errors.New("the engine lacks the configured runtime")

// runtimeSpec says how a known runtime is installed and registered.
type runtimeSpec struct {
	bin  string   // executable name
	pkg  string   // Debian package
	args []string // runtimeArgs in daemon.json
}

// knownRuntimes are the runtimes the private engine can register.
//
// runsc (gVisor, Debian's 2022 build) refuses to start a container
// without a network namespace of its own unless told --network=none ("cannot
// run with network enabled in root network namespace"); agentbox never gives
// a container a network, so none is also the right policy. The default
// (ptrace) platform is the one that works on these machines. Docker's
// seccomp profile is only applied inside gVisor with --oci-seccomp; the
// Sentry itself is the syscall boundary, the profile is defence in depth.
//
// runsc itself keeps host unix sockets closed: gVisor cannot mount a file
// over a socket, so a socket a host process makes in the workspace could
// not be masked (sandbox/docker/sockets.go) and --host-uds=open would let
// every command connect to it. The egress proxy's relay needs a host socket
// (sandbox/docker/egress.go), so runsc is registered a second time, as
// runsc-egress (EgressRuntime) with --host-uds=open, used only by executors
// whose network mode sends traffic to the proxy.
var knownRuntimes = map[string]runtimeSpec{
	"runsc":                 {bin: "runsc", pkg: "runsc", args: []string{"--network=none", "--oci-seccomp"}},
	"runsc" + egressRuntime: {bin: "runsc", pkg: "runsc", args: []string{"--network=none", "--oci-seccomp", "--host-uds=open"}},
}

// egressRuntime is the suffix of the name a runtime is registered under
// a second time with host unix sockets open, for the egress relay.
const egressRuntime = "-egress"

// EgressRuntime is the name of the variant of runtime whose containers may
// connect to a host unix socket (the egress proxy's): runsc-egress for
// runsc. The caller uses it only when the engine offers it.
func EgressRuntime(runtime string) string { return runtime + egressRuntime }

// HostUDSOpen reports whether a runtime registered with args lets a
// container connect to host unix sockets (gVisor's --host-uds other than
// none).
func HostUDSOpen(args []string) bool {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--host-uds")
		if !ok {
			v, ok = strings.CutPrefix(a, "-host-uds")
		}
		if !ok {
			continue
		}
		if v == "" && i+1 < len(args) {
			v = "=" + args[i+1]
		}
		if v != "=none" {
			return true
		}
	}
	return false
}

// daemonRuntime is one entry of daemon.json's "runtimes".
type daemonRuntime struct {
	Path        string   `json:"path"`
	RuntimeArgs []string `json:"runtimeArgs,omitempty"`
}

// daemonConfig is the private engine's daemon.json.
type daemonConfig struct {
	Runtimes map[string]daemonRuntime `json:"runtimes,omitempty"`
}

// installedRuntimes are the known runtimes whose executables exist.
func installedRuntimes() map[string]daemonRuntime {
	out := map[string]daemonRuntime{}
	for name, rs := range knownRuntimes {
		if p, err := lookSbin(rs.bin); err == nil {
			out[name] = daemonRuntime{Path: p, RuntimeArgs: rs.args}
		}
	}
	return out
}

// writeDaemonConfig writes the private engine's daemon.json atomically.
func writeDaemonConfig(path string, c daemonConfig) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("private engine config: %w", err)
	}
	return nil
}

// ensureRuntimeInstalled makes sure the executable of the configured
// runtime exists, installing its Debian package when allowed.
func ensureRuntimeInstalled(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	name := cfg.Sandbox.Runtime
	if name == "" || name == "runc" {
		return nil
	}
	rs, known := knownRuntimes[name]
	if !known {
		return nil // the operator registered it with their own engine
	}
	if _, err := lookSbin(rs.bin); err == nil {
		return nil
	}
	if os.Geteuid() != 0 || !cfg.Engine.AutoInstall {
		return fmt.Errorf("%w: sandbox.runtime is %s but %s is not installed: install it with `apt-get install -y %s`", ErrNoRuntime, name, rs.bin, rs.pkg)
	}
	log.Info("runtime is missing; installing its Debian package", "runtime", name, "package", rs.pkg)
	if err := InstallPackages(ctx, rs.pkg); err != nil {
		return fmt.Errorf("installing %s: %w; install it by hand with `apt-get install -y %s`", rs.pkg, err, rs.pkg)
	}
	_, err := lookSbin(rs.bin)
	return err
}

// Runtimes lists the OCI runtimes the engine behind cli offers, sorted.
func Runtimes(ctx context.Context, cli client.APIClient) ([]string, error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(info.Runtimes))
	for n := range info.Runtimes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// CheckRuntime returns nil when the engine behind cli offers runtime (""
// always passes) and otherwise an error wrapping ErrNoRuntime that says how
// to register it.
func CheckRuntime(ctx context.Context, cli client.APIClient, runtime string) error {
	if runtime == "" {
		return nil
	}
	have, err := Runtimes(ctx, cli)
	if err != nil {
		return fmt.Errorf("listing the engine's runtimes: %w", err)
	}
	if slices.Contains(have, runtime) {
		return nil
	}
	how := "register it with your engine (dockerd --add-runtime " + runtime + "=/path/to/" + runtime + ")"
	if _, known := knownRuntimes[runtime]; known {
		how = "run `agentbox engine start` as root (it installs " + runtime + " and registers it with agentbox's private engine), or register it with your engine"
	}
	return fmt.Errorf("%w: sandbox.runtime is %s but the engine offers only %s; %s", ErrNoRuntime, runtime, strings.Join(have, ", "), how)
}

// runtimesCurrent reports whether the daemon.json at path registers the
// runtimes of want with want's arguments (installedRuntimes: what
// agentbox would write now) (an
// engine registered by an older agentbox lacks runsc-egress, or opens host
// sockets to every runsc container).
// A daemon.json agentbox did not write counts as current.
func runtimesCurrent(path string, want map[string]daemonRuntime) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	var have daemonConfig
	if json.Unmarshal(b, &have) != nil {
		return true
	}
	for name, w := range want {
		h, ok := have.Runtimes[name]
		if !ok || !slices.Equal(h.RuntimeArgs, w.RuntimeArgs) {
			return false
		}
	}
	return true
}

// addRuntimeLive registers the configured runtime with the running private
// engine, or updates its arguments: rewrite its daemon.json and make
// dockerd reload it. An engine
// agentbox did not start, or one started before it read its own
// daemon.json, is left alone with an error saying what to do.
func addRuntimeLive(ctx context.Context, cli client.APIClient, cfg *config.Config, info Info) error {
	p := privatePaths(cfg.StateDir)
	if CheckRuntime(ctx, cli, cfg.Sandbox.Runtime) == nil && runtimesCurrent(p.Config, installedRuntimes()) {
		return nil
	}
	pid, ours := ourPID(p)
	if info.Source != SourcePrivate || !ours {
		return CheckRuntime(ctx, cli, cfg.Sandbox.Runtime)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "\x00--config-file\x00"+p.Config+"\x00") {
		return fmt.Errorf("%w: the private engine was started without its own daemon.json; restart it to register %s: `agentbox engine stop && agentbox engine start`", ErrNoRuntime, cfg.Sandbox.Runtime)
	}
	if err := writeDaemonConfig(p.Config, daemonConfig{Runtimes: installedRuntimes()}); err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reloading the private engine: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := CheckRuntime(ctx, cli, cfg.Sandbox.Runtime)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
