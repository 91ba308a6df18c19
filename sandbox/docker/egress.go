package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
	"github.com/agentbox/agentbox/sandbox/initproc"
)

// egressDir is where the egress proxy's socket directory is mounted,
// read-only, in every container when network.mode is allowlist.
const egressDir = "/.agentbox/egress"

// The network of a Runner's containers. They never get an interface but
// loopback. With network.mode none, init answers every proxied request at
// once with "this sandbox has no network". With allowlist, the Runner
// serves an egress proxy on a unix socket in a private directory
// (mode 0700, owned by the containers' uid) mounted read-only at
// egressDir; init relays 127.0.0.1:sandbox.EgressPort to it, naming the
// call, and the proxy checks the caller's uid (SO_PEERCRED: the
// containers' uid, or root, the gofer, under gVisor) and a token that
// only the Runner's requests carry.
type egressState struct {
	dir    string // host directory holding the socket
	token  string
	cancel context.CancelFunc
	done   chan struct{}
}

// WithEgressAudit sends every egress connection to f (default: the
// Runner's logger, at info level).
func WithEgressAudit(f egress.AuditFunc) Option {
	return func(o *options) { o.egressAudit = f }
}

// withEgressApprover asks a for destinations no network rule covers,
// waiting at most timeout (default: such destinations are refused).
func withEgressApprover(a egress.Approver, timeout time.Duration) Option {
	return func(o *options) { o.egressApprover, o.egressTimeout = a, timeout }
}

// WithEgressGate adds options to the proxy's gate (a resolver, a
// classifier; tests map names to their own servers with it).
func WithEgressGate(opts ...egress.GateOption) Option {
	return func(o *options) { o.egressGate = append(o.egressGate, opts...) }
}

// startEgress starts the proxy when the configuration allows a network.
func (r *Runner) startEgress(cfg *config.Config, o options) error {
	if cfg.Network.Mode != config.NetworkAllowlist {
		return nil
	}
	p, err := egress.NewPolicy(cfg.Network.Allow, cfg.Network.Deny)
	if err != nil {
		return fmt.Errorf("%w: %w: network: %w", sandbox.ErrUnavailable, sandbox.ErrNoEgress, err)
	}
	for _, w := range cfg.Network.Warnings() {
		r.log.Warn(w)
	}
	if os.Geteuid() != 0 && os.Geteuid() != r.uid {
		return fmt.Errorf("%w: %w: network.mode allowlist: commands run as uid %d and agentbox as uid %d, so the proxy socket cannot be made reachable by that uid alone; "+
			"run agentbox as root or as the workspace owner, or set network.mode: none", sandbox.ErrUnavailable, sandbox.ErrNoEgress, r.uid, os.Geteuid())
	}
	gopts := append([]egress.GateOption(nil), o.egressGate...)
	if o.egressApprover != nil {
		t := o.egressTimeout
		if t <= 0 {
			t = cfg.MCP.ApprovalTimeout
		}
		gopts = append(gopts, egress.WithApprover(o.egressApprover, t))
	}
	auth, token, err := egress.NewToken()
	if err != nil {
		return fmt.Errorf("%w: %w: %w", sandbox.ErrUnavailable, sandbox.ErrNoEgress, err)
	}
	audit := o.egressAudit
	if audit == nil {
		audit = func(ev egress.Event) {
			r.log.Info("egress", "call", ev.Call, "session", ev.Session, "host", ev.Host, "port", ev.Port, "addr", ev.Addr,
				"decision", ev.Decision, "by", ev.By, "reason", ev.Reason, "out", ev.BytesOut, "in", ev.BytesIn, "duration", ev.Duration)
		}
	}
	uids := []uint32{uint32(r.uid)}
	if r.gvisor {
		uids = append(uids, 0) // the gofer connects for the container
	}
	srv := egress.NewServer(egress.NewGate(p, gopts...), auth, egress.WithAudit(audit), egress.WithPeerUIDs(uids...), egress.WithLogger(r.log))
	// Short and private: a unix socket path must fit in 108 bytes.
	dir := filepath.Join(os.TempDir(), "agentbox-egress-"+r.id[:12])
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w: socket directory: %w", sandbox.ErrUnavailable, sandbox.ErrNoEgress, err)
	}
	ln, err := egress.Listen(dir)
	if err == nil && os.Geteuid() == 0 {
		err = os.Chown(dir, r.uid, r.gid)
		if err == nil {
			err = os.Chown(filepath.Join(dir, egress.SocketName), r.uid, r.gid)
		}
	}
	if err == nil {
		err = os.Chmod(filepath.Join(dir, egress.SocketName), 0o600)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		os.RemoveAll(dir)
		return fmt.Errorf("%w: %w: %w", sandbox.ErrUnavailable, sandbox.ErrNoEgress, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &egressState{dir: dir, token: token, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		if err := srv.Serve(ctx, ln); err != nil {
			r.log.Warn("egress proxy stopped", "err", err)
		}
	}()
	r.egress = st
	return nil
}

// stopEgress stops the proxy and removes its directory.
func (r *Runner) stopEgress() {
	if r.egress == nil {
		return
	}
	r.egress.cancel()
	<-r.egress.done
	os.RemoveAll(r.egress.dir)
}

// egressSource is the bind source of the socket directory, if any.
func (r *Runner) egressSource() ([]bindSource, error) {
	if r.egress == nil {
		return nil, nil
	}
	f, err := unix.Open(r.egress.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the egress socket directory: %w", err)
	}
	return []bindSource{{target: egressDir, fd: os.NewFile(uintptr(f), r.egress.dir), path: r.egress.dir, ro: true}}, nil
}

// egressReq is the network part of a command's request.
func (r *Runner) egressReq(spec sandbox.Spec) *initproc.EgressReq {
	e := &initproc.EgressReq{Port: sandbox.EgressPort}
	if r.egress != nil {
		e.Socket = egressDir + "/" + egress.SocketName
		e.Token, e.Call, e.Session = r.egress.token, spec.Call, spec.Session
	}
	return e
}
