package egress

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// dialSocket opens a connection straight to the proxy's unix socket (as a
// sandboxed command can: the socket's directory is mounted into the
// container) and, when preamble is not empty, sends it.
func dialSocket(t *testing.T, e *proxyEnv, preamble string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if preamble != "" {
		if _, err := io.WriteString(c, preamble); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// Connections that never send a preamble (no token: anything in the
// sandbox can open them) must neither pile up without bound in the
// agentbox process (a goroutine, a socket and a 32 KiB buffer each) nor
// stay long.
func TestProxyBoundsUnauthenticatedConnections(t *testing.T) {
	e := newProxyEnv(t, envConfig{allow: []string{"good.test"}, serverOpts: []ServerOption{WithAudit(func(Event) {})}})
	before := runtime.NumGoroutine()
	const n = 1500
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, dialSocket(t, e, ""))
	}
	time.Sleep(300 * time.Millisecond)
	if held := runtime.NumGoroutine() - before; held > n/2 {
		t.Errorf("%d connections without a preamble hold %d goroutines in the proxy; want a bound well below", n, held)
	}
	// The first one is closed soon, not after the ClientHello wait.
	_ = conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err := io.ReadAll(conns[0])
	if err != nil || time.Since(start) > 4*time.Second {
		t.Errorf("a connection without a preamble was kept %s (err %v)", time.Since(start), err)
	}
}

// One call cannot take every connection the proxy serves: past its own
// cap its connections are refused, and another call is still served.
func TestProxyBoundsConnectionsPerCall(t *testing.T) {
	e := newProxyEnv(t, envConfig{allow: []string{"good.test"}, serverOpts: []ServerOption{WithAudit(func(Event) {})}})
	pre := func(call string) string {
		return Preamble{Token: e.token, Caller: Caller{Call: call, Session: "s"}}.String()
	}
	// Kept-alive connections of call "hog" that send nothing after the
	// preamble (the proxy waits for a request head).
	var refused net.Conn
	for i := range 400 {
		c := dialSocket(t, e, pre("hog"))
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		b := make([]byte, 1)
		if _, err := c.Read(b); err == nil {
			refused = c
			t.Logf("refused after %d connections", i)
			break
		}
	}
	if refused == nil {
		t.Fatal("400 idle connections of one call were all held open")
	}
	_ = refused.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, _ := io.ReadAll(refused)
	if !strings.Contains(string(rest), ReasonTooMany) {
		t.Fatalf("refusal %q does not name %q", rest, ReasonTooMany)
	}
	// Another call is served.
	c := dialSocket(t, e, pre("other"))
	fmt.Fprint(c, "GET http://good.test:1/ HTTP/1.1\r\nHost: good.test:1\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if strings.Contains(string(b), ReasonTooMany) || !strings.HasPrefix(string(b), "HTTP/1.1 ") {
		t.Fatalf("another call was not served: %q", b)
	}
}
