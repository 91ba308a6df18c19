package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// Event is one audited connection attempt.
type Event struct {
	Time     time.Time
	Call     string
	Session  string
	Kind     string // "connect" (a CONNECT tunnel), "http" (a forwarded request) or "refused" (before any target)
	Method   string // the HTTP method of a forwarded request
	Host     string
	Port     uint16
	Addr     string // the address dialed, when one was
	Decision string // "allow" or "deny"
	By       string // the rule or party that decided
	Reason   string // refusal reason, when refused
	BytesOut int64  // client → destination
	BytesIn  int64  // destination → client
	Duration time.Duration
}

// AuditFunc receives every Event. It must not block for long.
type AuditFunc func(Event)

// Server is the proxy a sandbox reaches over its unix socket. Safe for
// concurrent use.
type Server struct {
	gate        *Gate
	auth        frontdoor.Verifier
	audit       AuditFunc
	uids        []uint32
	helloWait   time.Duration
	idle        time.Duration
	log         *slog.Logger
	connections sync.WaitGroup

	maxConns, maxPerCall int
	mu                   sync.Mutex
	open                 int            // authenticated connections being served
	perCall              map[string]int // authenticated connections per call
	unauthenticated      []net.Conn     // accepted, preamble not yet checked; oldest first
}

// Connection limits: anything in a sandbox can open the socket, so the
// proxy bounds what it holds (a goroutine, a socket and a 32 KiB buffer
// per connection) and how long an unauthenticated one may stay.
const (
	// DefaultMaxConns bounds the authenticated connections one Server
	// serves at once, and apart from them those that have not yet sent
	// their preamble (a new one closes the oldest of those, so that a
	// flood without a token cannot keep the relay's connections out).
	DefaultMaxConns = 512
	// DefaultMaxConnsPerCall bounds one call's connections, so that one
	// call cannot take them all.
	DefaultMaxConnsPerCall = 128
	// preambleWait is how long a new connection may take to send its
	// preamble (the relay sends it at once).
	preambleWait = 2 * time.Second
)

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithAudit sets the audit sink.
func WithAudit(f AuditFunc) ServerOption { return func(s *Server) { s.audit = f } }

// WithPeerUIDs sets which uids may connect (SO_PEERCRED); the default is
// this process's uid only. Under gVisor the peer is the gofer (uid 0).
func WithPeerUIDs(uids ...uint32) ServerOption { return func(s *Server) { s.uids = uids } }

// WithTimeouts sets how long a client may take to send its ClientHello
// and how long a kept-alive connection may sit idle.
func WithTimeouts(hello, idle time.Duration) ServerOption {
	return func(s *Server) { s.helloWait, s.idle = hello, idle }
}

// WithLogger sets a logger (default: none).
func WithLogger(l *slog.Logger) ServerOption { return func(s *Server) { s.log = l } }

// NewServer builds a proxy over g; every caller must pass auth.
func NewServer(g *Gate, auth frontdoor.Verifier, opts ...ServerOption) *Server {
	s := &Server{gate: g, auth: auth, audit: func(Event) {}, uids: []uint32{uint32(os.Getuid())},
		helloWait: 10 * time.Second, idle: 2 * time.Minute,
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		maxConns: DefaultMaxConns, maxPerCall: DefaultMaxConnsPerCall, perCall: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SocketName is the proxy socket's name in its directory.
const SocketName = "egress.sock"

// Listen creates dir (mode 0700) when it is missing and listens on
// dir/SocketName. An existing dir must be a real directory of this uid
// closed to group and others, below directories no other user can swap
// (frontdoor.CheckPrivateDir); it is never chmod'ed into shape.
func Listen(dir string) (net.Listener, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("egress socket dir: %w", err)
	}
	if err := frontdoor.CheckPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("egress socket dir: %w", err)
	}
	path := filepath.Join(dir, SocketName)
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress listen: %w", err)
	}
	return ln, nil
}

// Serve accepts connections until ctx ends or ln fails; it closes ln and
// every open connection on the way out.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.connections.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("egress accept: %w", err)
		}
		s.admit(c)
		s.connections.Add(1)
		go func() {
			defer s.connections.Done()
			defer s.authenticated(c)
			s.ServeConn(ctx, c)
		}()
	}
}

// admit registers c as not yet authenticated; when maxConns are, the
// oldest is closed (its preamble read fails and it is refused).
func (s *Server) admit(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unauthenticated) >= s.maxConns {
		s.unauthenticated[0].Close()
		s.unauthenticated = s.unauthenticated[1:]
	}
	s.unauthenticated = append(s.unauthenticated, c)
}

// authenticated forgets c as unauthenticated (it passed, or it ended).
func (s *Server) authenticated(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.unauthenticated, c); i >= 0 {
		s.unauthenticated = slices.Delete(s.unauthenticated, i, i+1)
	}
}

// take counts a connection against the Server's cap and call's; when
// one is reached it counts nothing and names who has too many.
func (s *Server) take(call string) (full string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= s.maxConns:
		return "the proxy"
	case s.perCall[call] >= s.maxPerCall:
		return "this call"
	}
	s.open++
	s.perCall[call]++
	return ""
}

func (s *Server) release(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.perCall[call]--; s.perCall[call] <= 0 {
		delete(s.perCall, call)
	}
}

// tooMany refuses c (whose owner has too many connections open) and
// closes it; the write cannot block the caller.
func (s *Server) tooMany(c net.Conn, ev Event, who string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	s.refuse(c, ev, refusef(ReasonTooMany, "", "%s has too many connections open; close some first", who))
	c.Close()
}

// ServeConn serves one relay connection and closes it.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	start := time.Now()
	uid, err := peerUID(c)
	if err == nil && !slices.Contains(s.uids, uid) {
		err = fmt.Errorf("%w: uid %d", ErrUnauthenticated, uid)
	}
	br := bufio.NewReaderSize(c, MaxHeaderBytes)
	var p Preamble
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(min(s.helloWait, preambleWait)))
		p, err = readPreamble(br)
	}
	if err == nil {
		if verr := s.auth.Verify(p.Token); verr != nil {
			err = fmt.Errorf("%w: %w", ErrUnauthenticated, verr)
		}
	}
	if err != nil {
		s.log.Debug("egress caller refused", "err", err)
		r := &Refusal{Reason: ReasonAuth, Detail: "this connection did not come through the sandbox's relay"}
		s.refuse(c, Event{Time: start, Kind: "refused"}, r)
		return
	}
	s.authenticated(c)
	if who := s.take(p.Call); who != "" {
		s.tooMany(c, s.event(p.Caller, "refused", start), who)
		return
	}
	defer s.release(p.Call)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.idle))
		head, err := peekHead(br)
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				s.refuse(c, s.event(p.Caller, "refused", start), refusef(ReasonBadRequest, "", "request head larger than %d bytes", MaxHeaderBytes))
			} else if errors.Is(err, io.ErrUnexpectedEOF) {
				s.refuse(c, s.event(p.Caller, "refused", start), notHTTP())
			}
			return
		}
		if head[0] < 'A' || head[0] > 'Z' {
			s.refuse(c, s.event(p.Caller, "refused", start), notHTTP())
			return
		}
		rh, r := parseHead(head)
		if r != nil {
			s.refuse(c, s.event(p.Caller, "refused", start), r)
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			s.refuse(c, s.event(p.Caller, "refused", start), refusef(ReasonBadRequest, "", "malformed request: %v", err))
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			s.connect(ctx, p.Caller, c, br, req, rh)
			return
		}
		if !s.forward(ctx, p.Caller, c, br, req, rh) {
			return
		}
		start = time.Now()
	}
}

func notHTTP() *Refusal {
	return refusef(ReasonUnsupported, "", "this proxy speaks HTTP/1.1 forward requests and CONNECT only (no SOCKS, no raw TCP)")
}

func (s *Server) event(c Caller, kind string, start time.Time) Event {
	return Event{Time: start, Call: c.Call, Session: c.Session, Kind: kind}
}

// refuse writes the refusal as an HTTP 403 (400 for malformed requests,
// 502 when the destination did not answer) and audits it.
func (s *Server) refuse(w io.Writer, ev Event, r *Refusal) {
	ev.Decision, ev.Reason = "deny", r.Reason
	if ev.By == "" {
		ev.By = "proxy"
	}
	// Recorded before the client hears of it: a command that exits on the
	// refusal must find it in its call's network summary.
	s.finish(ev)
	writeRefusal(w, r)
}

// writeRefusal writes r as a complete HTTP response that closes the
// connection: 403 (400 for a malformed request, 502 when the destination
// did not answer), the reason in X-Agentbox-Error, the text as the body.
func writeRefusal(w io.Writer, r *Refusal) {
	status := http.StatusForbidden
	switch r.Reason {
	case ReasonBadRequest, ReasonSmuggling:
		status = http.StatusBadRequest
	case ReasonDial, ReasonResolve:
		status = http.StatusBadGateway
	}
	body := r.Error() + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Agentbox-Error: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), r.Reason, len(body), body)
}

func (s *Server) finish(ev Event) {
	ev.Duration = time.Since(ev.Time)
	s.audit(ev)
}

// SetTarget copies the outcome of Gate.Connect(host, port) into the
// event: the destination, the address dialed, and who decided (the rule,
// or the address check or dial that failed after the rule allowed it).
func (ev *Event) SetTarget(host string, port uint16, t Target, err error) {
	ev.Host, ev.Port, ev.By = t.Host, port, t.Decision.By
	if ev.Host == "" {
		ev.Host = host
	}
	if t.Addr.IsValid() {
		ev.Addr = t.Addr.String()
	}
	if err != nil && t.Decision.Verdict == Allow {
		// The policy allowed the name; what failed came after it.
		ev.By = "address check"
		switch AsRefusal(err).Reason {
		case ReasonDial, ReasonResolve:
			ev.By = "dial"
		case ReasonClientGone:
			ev.By = "proxy"
		}
	}
}

func (s *Server) connect(ctx context.Context, c Caller, conn net.Conn, br *bufio.Reader, req *http.Request, rh rawHead) {
	ev := s.event(c, "connect", time.Now())
	host, port, err := splitHostPort(rh.target, 0)
	if err != nil || strings.ContainsAny(rh.target, "/@?#") {
		s.refuse(conn, ev, refusef(ReasonBadRequest, "", "CONNECT needs host:port, got %q", rh.target))
		return
	}
	if hv := rh.header.Get("Host"); hv != "" && !sameAuthority(hv, rh.target, port) {
		ev.Host, ev.Port = host, port
		s.refuse(conn, ev, refusef(ReasonHostMismatch, "", "Host header %q differs from the CONNECT target %q", hv, rh.target))
		return
	}
	gctx, stopWatch := watchGone(ctx, conn, br)
	up, t, err := s.gate.Connect(gctx, c, host, port)
	stopWatch()
	ev.SetTarget(host, port, t, err)
	if err != nil {
		s.refuse(conn, ev, AsRefusal(err))
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		// The client left while the destination was dialed: the proxy
		// did connect, so the record is kept.
		ev.Decision = "allow"
		s.finish(ev)
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(s.helloWait))
	raw, ch, err := readClientHello(br, 0)
	_ = conn.SetReadDeadline(time.Time{})
	if r := checkHello(t, ch, err); r != nil {
		// Past the 200 the client speaks TLS: answer with a fatal
		// access_denied alert and close.
		_, _ = conn.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x31})
		ev.Decision, ev.Reason, ev.By = "deny", r.Reason, "tls check"
		s.finish(ev)
		return
	}
	ev.Decision = "allow"
	// Every write to the destination waits at most the idle timeout: one
	// that takes no bytes must not hold the tunnel once the client is
	// gone (nothing reads the client while the copy waits to write).
	cu := &counter{Conn: up, idle: s.idle}
	if _, err := cu.Write(raw); err == nil {
		ev.BytesIn = relay(conn, br, cu)
	}
	ev.BytesOut = cu.out
	s.finish(ev)
}

// watchGone returns a context that ends with cause ErrClientGone when the
// client of a CONNECT hangs up, or half-closes, while its tunnel waits for
// a decision (perhaps an approval), even after it sent early bytes (a
// ClientHello before the 200) as long as they fit in br. stop ends the
// watch and waits for it; br keeps every byte that arrived meanwhile.
func watchGone(ctx context.Context, conn net.Conn, br *bufio.Reader) (context.Context, func()) {
	gctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Peeking one byte more each time keeps every byte in br and
		// still sees a hang-up after early bytes (a ClientHello sent
		// before the 200), until br is full.
		for n := 1; n <= br.Size(); n = br.Buffered() + 1 {
			var ne net.Error
			if _, err := br.Peek(n); err != nil {
				if !(errors.As(err, &ne) && ne.Timeout()) {
					cancel(ErrClientGone)
				}
				return
			}
		}
	}()
	return gctx, func() {
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = conn.SetReadDeadline(time.Time{})
		cancel(nil)
	}
}

// checkHello applies the TLS rules to a CONNECT tunnel: TLS, a server
// name equal to the CONNECT host, no encrypted ClientHello. A listed IP
// literal may come without a server name (clients send none for
// addresses).
func checkHello(t Target, ch ClientHello, err error) *Refusal {
	switch {
	case errors.Is(err, ErrNotTLS):
		return refusef(ReasonNotTLS, "", "a CONNECT tunnel must carry TLS")
	case err != nil:
		return refusef(ReasonBadRequest, "", "%v", err)
	case ch.ECH:
		return refusef(ReasonECH, "", "encrypted ClientHello hides the server name")
	case ch.ServerName == "" && t.Literal:
		return nil
	case ch.ServerName == "":
		return refusef(ReasonNoSNI, "", "TLS to %s without a server name", t.Host)
	}
	sni, _, nerr := NormalizeHost(ch.ServerName)
	if nerr != nil || sni != t.Host {
		return refusef(ReasonSNIMismatch, "", "TLS server name differs from the CONNECT host %s", t.Host)
	}
	return nil
}

// lingerAfterClose is how long the other direction may go on after one
// side closed: after the destination closed, the client has that long in
// all; after the client closed (or hung up), the destination may stay
// silent that long at a time. (A variable for tests.)
var lingerAfterClose = 10 * time.Second

// copyLinger copies src to dst like io.Copy (so the kernel splices a TCP
// source into a unix socket) until src ends. Once closed is set a
// deadline on src ends a copy that stalls: each window of
// lingerAfterClose that moved bytes arms the next, a silent one ends it.
func copyLinger(dst io.Writer, src net.Conn, closed *atomic.Bool) int64 {
	var total int64
	for {
		n, err := io.Copy(dst, src)
		total += n
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() || !closed.Load() || n == 0 {
			return total
		}
		_ = src.SetReadDeadline(time.Now().Add(lingerAfterClose))
	}
}

// relay copies both ways until both directions end and returns the bytes
// from upstream to the client (up counts the other way). Neither side can
// hold the tunnel (its sockets and goroutines) open forever once the
// other has closed, and a destination that takes no bytes for up.idle
// ends it: the copy to it would otherwise wait forever, whether or not
// the client is still there. The upload goes through up's counting
// writer; the download is spliced.
func relay(client net.Conn, br *bufio.Reader, up *counter) (in int64) {
	var wg sync.WaitGroup
	var clientClosed atomic.Bool
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(up, br); err != nil {
			// The destination stopped taking bytes or the client
			// failed: nothing more goes either way.
			_ = up.Close()
		} else {
			closeWrite(up.Conn)
		}
		// The client is done (or gone): a destination that neither
		// answers nor closes must not keep the tunnel forever.
		clientClosed.Store(true)
		_ = up.SetReadDeadline(time.Now().Add(lingerAfterClose))
	}()
	go func() {
		defer wg.Done()
		in = copyLinger(client, up.Conn, &clientClosed)
		closeWrite(client)
		// The destination is done; do not wait forever for a client
		// that never closes its side.
		_ = client.SetReadDeadline(time.Now().Add(lingerAfterClose))
	}()
	wg.Wait()
	return in
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
