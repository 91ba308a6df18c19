package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testCA issues certificates for the test servers.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentbox test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) leaf(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mapResolver answers from a table; a name with several entries answers
// them in turn (the last one repeats): a rebinding DNS server.
type mapResolver struct {
	mu    sync.Mutex
	names map[string][][]netip.Addr
	calls map[string]int
}

func (r *mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := r.calls[host]
	r.calls[host]++
	return seq[min(n, len(seq)-1)], nil
}

func (r *mapResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// counted is a loopback server that counts what reaches it.
type counted struct {
	ln        net.Listener
	conns     atomic.Int64
	requests  atomic.Int64
	handshake atomic.Int64
}

// serveHTTP starts a plain HTTP server on ip:port (port 0 = any) that
// answers with its name.
func serveHTTP(t *testing.T, ip string, port int, name string) *counted {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	s := &counted{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s body=%d", name, r.Host, r.URL.Path, len(body))
	}), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// serveTLS starts an HTTPS server with a certificate for names.
func serveTLS(t *testing.T, ca *testCA, ip string, name string, names ...string) *counted {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &counted{}
	cert := ca.leaf(t, names...)
	tln := tls.NewListener(&countingListener{Listener: ln, n: &s.conns}, &tls.Config{
		Certificates: []tls.Certificate{cert},
		VerifyConnection: func(tls.ConnectionState) error {
			s.handshake.Add(1)
			return nil
		}})
	s.ln = ln
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		fmt.Fprintf(w, "%s tls %s", name, r.Host)
	})}
	srv.ErrorLog = log.New(io.Discard, "", 0)
	go srv.Serve(tln)
	t.Cleanup(func() { srv.Close() })
	return s
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func (s *counted) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// proxyEnv is a proxy on a unix socket with a relay on loopback in
// front of it, the way a sandbox sees it.
type proxyEnv struct {
	t        testing.TB
	socket   string
	token    string
	relay    string // host:port of the relay
	events   chan Event
	resolver *mapResolver
	dials    atomic.Int64
	asked    atomic.Int64
}

type envConfig struct {
	allow, deny []string
	names       map[string][][]netip.Addr
	local       []netip.Addr
	approver    Approver
	timeout     time.Duration
	maxPending  int
	serverOpts  []ServerOption
	unreachable string                                                               // dials to addresses with this prefix fail without touching the network
	dial        func(ctx context.Context, network, address string) (net.Conn, error) // replaces the real dial when set
}

func newProxyEnv(t testing.TB, cfg envConfig) *proxyEnv {
	t.Helper()
	p, err := NewPolicy(cfg.allow, cfg.deny)
	if err != nil {
		t.Fatal(err)
	}
	e := &proxyEnv{t: t, events: make(chan Event, 100),
		resolver: &mapResolver{names: cfg.names, calls: map[string]int{}}}
	local := append(hostAddrs(), cfg.local...)
	nd := &net.Dialer{Timeout: 5 * time.Second}
	opts := []GateOption{WithResolver(e.resolver),
		WithClassifier(&Classifier{Local: func() []netip.Addr { return local }}),
		WithDial(func(ctx context.Context, network, address string) (net.Conn, error) {
			e.dials.Add(1)
			if cfg.unreachable != "" && strings.HasPrefix(address, cfg.unreachable) {
				return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("unreachable in this test")}
			}
			if cfg.dial != nil {
				return cfg.dial(ctx, network, address)
			}
			return nd.DialContext(ctx, network, address)
		})}
	if cfg.approver != nil {
		a := cfg.approver
		opts = append(opts, WithApprover(func(ctx context.Context, q Question) (Verdict, error) {
			e.asked.Add(1)
			return a(ctx, q)
		}, cfg.timeout))
	}
	if cfg.maxPending > 0 {
		opts = append(opts, WithMaxPending(cfg.maxPending))
	}
	auth, token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	e.token = token
	srvOpts := append([]ServerOption{WithAudit(func(ev Event) { e.events <- ev })}, cfg.serverOpts...)
	srv := NewServer(NewGate(p, opts...), auth, srvOpts...)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir() + "/egress"
	ln, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	e.socket = ln.Addr().String()
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.relay = rln.Addr().String()
	rdone := make(chan struct{})
	go func() {
		Relay{Socket: e.socket, Preamble: Preamble{Token: token, Caller: Caller{Call: "call-1", Session: "sess-1"}}}.Serve(ctx, rln)
		close(rdone)
	}()
	t.Cleanup(func() { cancel(); <-done; <-rdone })
	return e
}

// event waits for the next audit event.
func (e *proxyEnv) event() Event {
	e.t.Helper()
	select {
	case ev := <-e.events:
		return ev
	case <-time.After(10 * time.Second):
		e.t.Fatal("no audit event")
	}
	return Event{}
}

// client is an HTTP client that uses the relay as its proxy.
func (e *proxyEnv) client(ca *testCA) *http.Client {
	pu, _ := url.Parse("http://" + e.relay)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	if ca != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: ca.pool}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// raw opens a connection to the relay.
func (e *proxyEnv) raw() (net.Conn, *bufio.Reader) {
	e.t.Helper()
	c, err := net.Dial("tcp", e.relay)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// connect sends CONNECT target and returns the response status and the
// conn (positioned after the response head).
func (e *proxyEnv) connect(target string) (net.Conn, *bufio.Reader, *http.Response) {
	e.t.Helper()
	c, br := e.raw()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		e.t.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, br, resp
}
