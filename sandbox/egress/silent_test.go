package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// silentServer accepts connections on 127.0.0.2, reads whatever comes,
// never answers and never closes: a destination that holds a
// connection open. closed receives one value each time the proxy side of
// a connection goes away (the read ends with the peer's FIN or a reset).
type silentServer struct {
	ln     net.Listener
	closed chan struct{}
	mu     sync.Mutex
	conns  []net.Conn
}

func serveSilent(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln, closed: make(chan struct{}, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, c) // until the proxy's FIN
				s.closed <- struct{}{}
			}()
		}
	}()
	return s
}

// stop closes everything; registered after the proxy's cleanup so that
// it runs first (a proxy stuck on a silent destination must not hang the
// test binary).
func (s *silentServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *silentServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *silentServer) waitClosed(t *testing.T, within time.Duration, what string) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(within):
		t.Fatalf("%s: the proxy still holds the destination's connection after %s", what, within)
	}
}

func silentEnv(t *testing.T, idle time.Duration) (*proxyEnv, *silentServer) {
	t.Helper()
	s := serveSilent(t)
	e := newProxyEnv(t, envConfig{
		allow:      []string{"silent.test", "127.0.0.2"},
		names:      map[string][][]netip.Addr{"silent.test": {addrs("127.0.0.2")}},
		serverOpts: []ServerOption{WithTimeouts(time.Second, idle)},
	})
	t.Cleanup(s.stop)
	return e, s
}

// A forwarded request to a destination that accepts and never answers
// must not hold the proxy (a goroutine, the client's socket and the
// destination's) forever: it ends after the idle timeout with a refusal,
// and both sockets are released.
func TestProxySilentDestinationOnForward(t *testing.T) {
	e, s := silentEnv(t, 300*time.Millisecond)
	c, br := e.raw()
	fmt.Fprintf(c, "GET http://silent.test:%d/ HTTP/1.1\r\nHost: silent.test:%d\r\n\r\n", s.port(), s.port())
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer while the destination stays silent: %v", err)
	}
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Agentbox-Error") != ReasonDial {
		t.Fatalf("got %d %q; want 502 %q", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"), ReasonDial)
	}
	s.waitClosed(t, 5*time.Second, "forward")
	if ev := e.event(); ev.Kind != "http" || ev.Reason != ReasonDial {
		t.Fatalf("audit event %+v", ev)
	}
}

// A client that hangs up on a tunnel whose destination stays silent
// (it neither answers nor closes after the client's FIN) must not keep
// the tunnel, its sockets and its goroutines forever; the connection's
// audit record (written when the tunnel ends) must come.
func TestProxySilentDestinationAfterClientHangsUp(t *testing.T) {
	old := lingerAfterClose
	lingerAfterClose = 300 * time.Millisecond
	t.Cleanup(func() { lingerAfterClose = old })
	e, s := silentEnv(t, time.Minute)
	c, br, resp := e.connect(fmt.Sprintf("silent.test:%d", s.port()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %d %s", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
	}
	// A real ClientHello naming silent.test; the handshake never
	// completes because the destination never answers.
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "silent.test"})
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	_ = tc.Handshake()
	c.Close()
	select {
	case ev := <-e.events:
		if ev.Kind != "connect" || ev.Decision != "allow" || ev.BytesOut == 0 {
			t.Fatalf("audit event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tunnel's audit record never came: the proxy still waits on the silent destination")
	}
	s.waitClosed(t, 5*time.Second, "tunnel")
}

// After the client half-closes, a destination that keeps sending (more
// slowly than it takes to fill a window, for several windows) keeps the
// tunnel: only a window with no bytes at all ends it. The whole stream
// arrives.
func TestProxyTunnelStreamsAfterClientHalfClose(t *testing.T) {
	old := lingerAfterClose
	lingerAfterClose = 200 * time.Millisecond
	t.Cleanup(func() { lingerAfterClose = old })
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	const chunks = 12 // 12 × 80 ms ≈ 5 windows
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c) // the hello, then the client's FIN
		for i := range chunks {
			time.Sleep(80 * time.Millisecond)
			fmt.Fprintf(c, "chunk %02d\n", i)
		}
	}()
	e := newProxyEnv(t, envConfig{
		allow: []string{"stream.test", "127.0.0.2"},
		names: map[string][][]netip.Addr{"stream.test": {addrs("127.0.0.2")}},
	})
	c, br, resp := e.connect(fmt.Sprintf("stream.test:%d", ln.Addr().(*net.TCPAddr).Port))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %d %s", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
	}
	if _, err := c.Write(goHello(t, "stream.test")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("after %q: %v", got, err)
	}
	if want := chunks * len("chunk 00\n"); len(got) != want {
		t.Fatalf("got %d bytes (%q), want %d: the tunnel ended while the destination was still sending", len(got), got, want)
	}
}
