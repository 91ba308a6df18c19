package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// attackEnv: good.test and 127.0.0.2 (exactly) are reachable; a secret
// service listens on 127.0.0.1 on the same port as the good one and must
// never be reached.
type attackEnv struct {
	*proxyEnv
	ca       *testCA
	good     *counted // plain HTTP on 127.0.0.2
	secret   *counted // plain HTTP on 127.0.0.1, same port
	goodTLS  *counted // HTTPS on 127.0.0.2, certificate for good.test and evil.test
	httpPort int
}

func newAttackEnv(t *testing.T, deny ...string) *attackEnv {
	t.Helper()
	a := &attackEnv{ca: newTestCA(t)}
	for try := 0; ; try++ {
		a.good = serveHTTP(t, "127.0.0.2", 0, "good")
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", a.good.port()))
		if err == nil {
			ln.Close()
			a.secret = serveHTTP(t, "127.0.0.1", a.good.port(), "secret")
			break
		}
		if try > 20 {
			t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
		}
	}
	a.httpPort = a.good.port()
	a.goodTLS = serveTLS(t, a.ca, "127.0.0.2", "good", "good.test", "evil.test")
	one := func(s ...string) [][]netip.Addr { return [][]netip.Addr{addrs(s...)} }
	a.proxyEnv = newProxyEnv(t, envConfig{
		allow: []string{"good.test", "evil.test", "loop.test", "meta.test", "mapped.test", "nat64.test", "own.test",
			"notown.test", "rebind.test", "mixed.test", "denied.test", "127.0.0.2"},
		deny: append([]string{"denied.test"}, deny...),
		names: map[string][][]netip.Addr{
			"good.test":   one("127.0.0.2"),
			"evil.test":   one("127.0.0.2"),
			"denied.test": one("127.0.0.2"),
			"loop.test":   one("127.0.0.1"),
			"meta.test":   one("169.254.169.254"),
			"mapped.test": one("::ffff:127.0.0.1"),
			"nat64.test":  one("64:ff9b::7f00:1"),
			"own.test":    one("192.0.2.10"),
			"notown.test": one("192.0.2.11"),
			"mixed.test":  one("127.0.0.2", "127.0.0.1"),
			"rebind.test": {addrs("127.0.0.2"), addrs("127.0.0.1")},
		},
		local:       addrs("192.0.2.10"),
		unreachable: "192.0.2.",
	})
	t.Cleanup(func() {
		if n := a.secret.conns.Load(); n != 0 {
			t.Errorf("the secret loopback service was reached %d times", n)
		}
	})
	return a
}

// get sends one plain HTTP request through the proxy.
func (a *attackEnv) get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := a.client(nil).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func wantRefusal(t *testing.T, resp *http.Response, body string, status int, reason string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("X-Agentbox-Error") != reason {
		t.Fatalf("got %d %q (%s); want %d %q", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"), strings.TrimSpace(body), status, reason)
	}
	if !strings.Contains(body, reason) {
		t.Fatalf("body %q does not name the reason %q", body, reason)
	}
}

func TestProxyAllows(t *testing.T) {
	a := newAttackEnv(t)
	t.Run("https through CONNECT", func(t *testing.T) {
		resp, err := a.client(a.ca).Get(fmt.Sprintf("https://good.test:%d/x", a.goodTLS.port()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("good tls good.test:%d", a.goodTLS.port()); string(b) != want {
			t.Fatalf("body %q; want %q", b, want)
		}
		ev := a.event()
		if ev.Kind != "connect" || ev.Decision != "allow" || ev.Host != "good.test" || ev.Addr != fmt.Sprintf("127.0.0.2:%d", a.goodTLS.port()) ||
			ev.Call != "call-1" || ev.Session != "sess-1" || ev.BytesOut == 0 || ev.BytesIn == 0 || !strings.Contains(ev.By, "good.test") {
			t.Fatalf("audit event %+v", ev)
		}
	})
	t.Run("plain http", func(t *testing.T) {
		resp, body := a.get(t, fmt.Sprintf("http://good.test:%d/p", a.httpPort))
		if resp.StatusCode != 200 || body != fmt.Sprintf("good good.test:%d /p body=0", a.httpPort) {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		if ev := a.event(); ev.Kind != "http" || ev.Method != "GET" || ev.Decision != "allow" {
			t.Fatalf("audit event %+v", ev)
		}
	})
	t.Run("listed address in decimal", func(t *testing.T) {
		resp, body := a.get(t, fmt.Sprintf("http://2130706434:%d/", a.httpPort))
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "good ") {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		a.event()
	})
	t.Run("post with a chunked body", func(t *testing.T) {
		resp, err := a.client(nil).Post(fmt.Sprintf("http://good.test:%d/up", a.httpPort), "text/plain", io.MultiReader(strings.NewReader("abc"), strings.NewReader("def")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasSuffix(string(b), "body=6") {
			t.Fatalf("%q", b)
		}
		a.event()
	})
}

// TestProxyAttacks: one case per attack; each must be refused with its
// reason, audited, and never reach the secret service.
func TestProxyAttacks(t *testing.T) {
	a := newAttackEnv(t)
	tlsPort := func() string { return fmt.Sprint(a.goodTLS.port()) }
	httpURL := func(host string) string { return fmt.Sprintf("http://%s:%d/", host, a.httpPort) }
	// tlsThrough opens CONNECT target and sends hello (or runs a TLS
	// handshake for sni when hello is nil); it returns whether the
	// handshake succeeded.
	tlsThrough := func(t *testing.T, target, sni string, hello []byte) bool {
		c, br, resp := a.connect(target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s = %d %s", target, resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
		}
		if hello != nil {
			c.Write(hello)
			b := make([]byte, 7)
			n, _ := io.ReadFull(br, b)
			if n != 7 || b[0] != 0x15 || b[6] != 0x31 {
				t.Fatalf("answer %x; want an access_denied alert", b[:n])
			}
			return false
		}
		tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: sni, RootCAs: a.ca.pool, InsecureSkipVerify: sni == ""})
		err := tc.Handshake()
		if err != nil && !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("handshake error %v; want the proxy's access_denied alert", err)
		}
		return err == nil
	}
	for _, tc := range []struct {
		name   string
		run    func(t *testing.T)
		reason string
	}{
		{"SNI differs from the CONNECT host", func(t *testing.T) {
			if tlsThrough(t, "good.test:"+tlsPort(), "evil.test", nil) {
				t.Fatal("handshake with another name went through")
			}
		}, ReasonSNIMismatch},
		{"no SNI", func(t *testing.T) {
			if tlsThrough(t, "good.test:"+tlsPort(), "", nil) {
				t.Fatal("handshake without SNI went through")
			}
		}, ReasonNoSNI},
		{"encrypted ClientHello", func(t *testing.T) {
			tlsThrough(t, "good.test:"+tlsPort(), "", handHello(sniExt("good.test"), ext(extECH, []byte{0, 1, 2, 3})))
		}, ReasonECH},
		{"CONNECT inside CONNECT", func(t *testing.T) {
			tlsThrough(t, "good.test:"+tlsPort(), "", []byte(fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", a.httpPort)))
		}, ReasonNotTLS},
		{"CONNECT to a name resolving to 127.0.0.1", func(t *testing.T) {
			_, _, resp := a.connect(fmt.Sprintf("loop.test:%d", a.httpPort))
			if resp.StatusCode != 403 || resp.Header.Get("X-Agentbox-Error") != ReasonAddress {
				t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
			}
		}, ReasonAddress},
		{"name resolving to 127.0.0.1", func(t *testing.T) {
			resp, body := a.get(t, httpURL("loop.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
			if strings.Contains(body, "127.0.0.1") {
				t.Fatalf("refusal leaks the address: %q", body)
			}
		}, ReasonAddress},
		{"name resolving to 169.254.169.254", func(t *testing.T) {
			resp, body := a.get(t, httpURL("meta.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
		}, ReasonAddress},
		{"name resolving to ::ffff:127.0.0.1", func(t *testing.T) {
			resp, body := a.get(t, httpURL("mapped.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
		}, ReasonAddress},
		{"name resolving to 64:ff9b::7f00:1", func(t *testing.T) {
			resp, body := a.get(t, httpURL("nat64.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
		}, ReasonAddress},
		{"name resolving to the host's own address", func(t *testing.T) {
			before := a.dials.Load()
			resp, body := a.get(t, httpURL("own.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
			if !strings.Contains(body, ClassHost) || a.dials.Load() != before {
				t.Fatalf("refused for the wrong reason or dialed: %q", body)
			}
		}, ReasonAddress},
		{"the same range, not the host's own address, is dialed", func(t *testing.T) {
			before := a.dials.Load()
			resp, body := a.get(t, httpURL("notown.test"))
			wantRefusal(t, resp, body, 502, ReasonDial)
			if a.dials.Load() != before+1 {
				t.Fatal("notown.test was not dialed")
			}
			if strings.Contains(body, "192.0.2") {
				t.Fatalf("refusal leaks the address: %q", body)
			}
		}, ReasonDial},
		{"one bad answer among good ones", func(t *testing.T) {
			resp, body := a.get(t, httpURL("mixed.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
		}, ReasonAddress},
		{"rebinding resolver", func(t *testing.T) {
			before := a.good.requests.Load()
			resp, body := a.get(t, httpURL("rebind.test"))
			if resp.StatusCode != 200 || !strings.HasPrefix(body, "good ") || a.good.requests.Load() != before+1 {
				t.Fatalf("first answer: %d %q", resp.StatusCode, body)
			}
			if n := a.resolver.count("rebind.test"); n != 1 {
				t.Fatalf("rebind.test looked up %d times for one connection; want 1", n)
			}
			a.event()
			resp, body = a.get(t, httpURL("rebind.test"))
			wantRefusal(t, resp, body, 403, ReasonAddress)
		}, ReasonAddress},
		{"decimal literal", func(t *testing.T) {
			resp, body := a.get(t, httpURL("2130706433"))
			wantRefusal(t, resp, body, 403, ReasonLiteral)
		}, ReasonLiteral},
		{"hex literal", func(t *testing.T) {
			resp, body := a.get(t, httpURL("0x7f.1"))
			wantRefusal(t, resp, body, 403, ReasonLiteral)
		}, ReasonLiteral},
		{"octal literal over CONNECT", func(t *testing.T) {
			_, _, resp := a.connect(fmt.Sprintf("0177.0.0.1:%d", a.httpPort))
			if resp.StatusCode != 403 || resp.Header.Get("X-Agentbox-Error") != ReasonLiteral {
				t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
			}
		}, ReasonLiteral},
		{"Host differs from the absolute URI", func(t *testing.T) {
			c, br := a.raw()
			fmt.Fprintf(c, "GET http://good.test:%d/ HTTP/1.1\r\nHost: loop.test:%d\r\n\r\n", a.httpPort, a.httpPort)
			resp, _ := http.ReadResponse(br, nil)
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 403, ReasonHostMismatch)
		}, ReasonHostMismatch},
		{"Content-Length with Transfer-Encoding", func(t *testing.T) {
			c, br := a.raw()
			fmt.Fprintf(c, "POST http://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://loop.test:%d/ HTTP/1.1\r\nHost: loop.test:%d\r\n\r\n",
				a.httpPort, a.httpPort, a.httpPort, a.httpPort)
			resp, _ := http.ReadResponse(br, nil)
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 400, ReasonSmuggling)
		}, ReasonSmuggling},
		{"userinfo in the URL", func(t *testing.T) {
			c, br := a.raw()
			fmt.Fprintf(c, "GET http://user:pw@good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n\r\n", a.httpPort, a.httpPort)
			resp, _ := http.ReadResponse(br, nil)
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 403, ReasonUserinfo)
		}, ReasonUserinfo},
		{"second request on a kept-alive connection to a denied host", func(t *testing.T) {
			before := a.good.requests.Load()
			c, br := a.raw()
			fmt.Fprintf(c, "GET http://good.test:%d/1 HTTP/1.1\r\nHost: good.test:%d\r\n\r\nGET http://denied.test:%d/2 HTTP/1.1\r\nHost: denied.test:%d\r\n\r\n",
				a.httpPort, a.httpPort, a.httpPort, a.httpPort)
			r1, err := http.ReadResponse(br, nil)
			if err != nil || r1.StatusCode != 200 {
				t.Fatalf("first: %v %v", r1, err)
			}
			io.ReadAll(r1.Body)
			if ev := a.event(); ev.Decision != "allow" || ev.Host != "good.test" {
				t.Fatalf("first event %+v", ev)
			}
			r2, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r2.Body)
			wantRefusal(t, r2, string(b), 403, ReasonDenied)
			if a.good.requests.Load() != before+1 {
				t.Fatal("the denied request reached the server")
			}
		}, ReasonDenied},
		{"plain HTTP to a denied host", func(t *testing.T) {
			resp, body := a.get(t, httpURL("denied.test"))
			wantRefusal(t, resp, body, 403, ReasonDenied)
			if !strings.Contains(body, "network.deny") {
				t.Fatalf("body does not name the setting: %q", body)
			}
		}, ReasonDenied},
		{"plain HTTP to an unknown host", func(t *testing.T) {
			resp, body := a.get(t, httpURL("unknown.test"))
			wantRefusal(t, resp, body, 403, ReasonNotAllowed)
			if !strings.Contains(body, `"unknown.test" to network.allow in the user config`) {
				t.Fatalf("body does not name the setting: %q", body)
			}
		}, ReasonNotAllowed},
		{"https URL in a forward request", func(t *testing.T) {
			c, br := a.raw()
			fmt.Fprintf(c, "GET https://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n\r\n", a.httpPort, a.httpPort)
			resp, _ := http.ReadResponse(br, nil)
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 403, ReasonUnsupported)
		}, ReasonUnsupported},
		{"origin-form request", func(t *testing.T) {
			c, br := a.raw()
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: good.test:%d\r\n\r\n", a.httpPort)
			resp, _ := http.ReadResponse(br, nil)
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 400, ReasonBadRequest)
		}, ReasonBadRequest},
		{"SOCKS5 greeting", func(t *testing.T) {
			c, br := a.raw()
			c.Write([]byte{5, 1, 0})
			c.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 403, ReasonUnsupported)
		}, ReasonUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			ev := a.event()
			if ev.Decision != "deny" || ev.Reason != tc.reason || ev.Call != "call-1" {
				t.Fatalf("audit event %+v; want a deny for %s", ev, tc.reason)
			}
			if n := a.goodTLS.handshake.Load(); n != 0 {
				t.Fatalf("the TLS server completed %d handshakes", n)
			}
		})
	}
}

// bufConn reads through the bufio.Reader that already holds bytes.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestProxyDenyStarWithAllow(t *testing.T) {
	good := serveHTTP(t, "127.0.0.2", 0, "good")
	e := newProxyEnv(t, envConfig{allow: []string{"good.test", "127.0.0.2"}, deny: []string{"*"},
		names:    map[string][][]netip.Addr{"good.test": {addrs("127.0.0.2")}, "other.test": {addrs("127.0.0.2")}},
		approver: func(context.Context, Question) (Verdict, error) { return Allow, nil }, timeout: time.Second})
	resp, err := e.client(nil).Get(fmt.Sprintf("http://good.test:%d/", good.port()))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed host: %v %v", resp, err)
	}
	resp.Body.Close()
	e.event()
	resp, err = e.client(nil).Get(fmt.Sprintf("http://other.test:%d/", good.port()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	wantRefusal(t, resp, string(b), 403, ReasonNotAllowed)
	if e.asked.Load() != 0 {
		t.Fatal(`deny "*" asked the approver`)
	}
	if ev := e.event(); ev.By != `network.deny "*"` {
		t.Fatalf("event %+v", ev)
	}
}

func TestProxyApprovals(t *testing.T) {
	good := serveHTTP(t, "127.0.0.2", 0, "good")
	release := make(chan struct{})
	defer close(release)
	e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"}, deny: []string{"denied.test"},
		names: map[string][][]netip.Addr{"yes.test": {addrs("127.0.0.2")}, "no.test": {addrs("127.0.0.2")},
			"slow.test": {addrs("127.0.0.2")}, "denied.test": {addrs("127.0.0.2")}, "hold.test": {addrs("127.0.0.2")}},
		approver: func(ctx context.Context, q Question) (Verdict, error) {
			if q.Call != "call-1" || q.Session != "sess-1" {
				return Deny, fmt.Errorf("wrong caller %+v", q.Caller)
			}
			switch q.Host {
			case "yes.test":
				return Allow, nil
			case "hold.test":
				select {
				case <-release:
				case <-ctx.Done():
				}
				return Deny, ctx.Err()
			case "slow.test":
				<-ctx.Done()
				return Allow, ctx.Err()
			}
			return Deny, nil
		}, timeout: 300 * time.Millisecond, maxPending: 1})
	get := func(host string) (*http.Response, string) {
		resp, err := e.client(nil).Get(fmt.Sprintf("http://%s:%d/", host, good.port()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, body := get("yes.test"); resp.StatusCode != 200 {
		t.Fatalf("approved: %d %s", resp.StatusCode, body)
	}
	if ev := e.event(); ev.By != "approver" || ev.Decision != "allow" {
		t.Fatalf("event %+v", ev)
	}
	resp, body := get("no.test")
	wantRefusal(t, resp, body, 403, ReasonApprovalDenied)
	e.event()
	start := time.Now()
	resp, body = get("slow.test")
	wantRefusal(t, resp, body, 403, ReasonApprovalTimeout)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	e.event()
	asked := e.asked.Load()
	resp, body = get("denied.test")
	wantRefusal(t, resp, body, 403, ReasonDenied)
	if e.asked.Load() != asked {
		t.Fatal("an explicit deny was put to the approver")
	}
	e.event()
	// One connection waits (hold.test); a second of the same call is
	// refused at once.
	held := make(chan *http.Response, 1)
	go func() {
		r, _ := e.client(nil).Get(fmt.Sprintf("http://hold.test:%d/", good.port()))
		held <- r
	}()
	for e.asked.Load() == asked {
		time.Sleep(10 * time.Millisecond)
	}
	resp, body = get("no.test")
	wantRefusal(t, resp, body, 403, ReasonPending)
}

func TestProxyAuthentication(t *testing.T) {
	e := newProxyEnv(t, envConfig{allow: []string{"*"}})
	for _, tc := range []struct {
		name, preamble string
	}{
		{"wrong token", Preamble{Token: strings.Repeat("0", 64), Caller: Caller{Call: "x"}}.String()},
		{"no token", Preamble{Caller: Caller{Call: "x"}}.String()},
		{"no preamble", "GET http://good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", e.socket)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.preamble)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			wantRefusal(t, resp, string(b), 403, ReasonAuth)
			if ev := e.event(); ev.Reason != ReasonAuth {
				t.Fatalf("event %+v", ev)
			}
		})
	}
	t.Run("right token, wrong uid", func(t *testing.T) {
		e := newProxyEnv(t, envConfig{allow: []string{"*"}, serverOpts: []ServerOption{WithPeerUIDs(uint32(os.Getuid()) + 1)}})
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, Preamble{Token: e.token}.String())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		wantRefusal(t, resp, string(b), 403, ReasonAuth)
	})
	t.Run("socket directory is private", func(t *testing.T) {
		fi, err := os.Stat(strings.TrimSuffix(e.socket, "/"+SocketName))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("socket dir mode %v, %v", fi.Mode(), err)
		}
	})
}

// A relay whose proxy is gone answers at once, and nothing gets out.
func TestRelayWithoutProxyFailsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Relay{Socket: t.TempDir() + "/missing.sock"}.Serve(ctx, ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT good.test:443 HTTP/1.1\r\nHost: good.test:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 502 || resp.Header.Get("X-Agentbox-Error") != "proxy-unavailable" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"))
	}
}

// A CONNECT client that hangs up while its tunnel waits for an approval
// withdraws the question (the approver's context ends with ErrClientGone),
// nothing is dialled, and the audit record says why.
func TestProxyApprovalWithdrawnWhenClientLeaves(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	asked := make(chan struct{})
	cause := make(chan error, 1)
	e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"},
		names: map[string][][]netip.Addr{"ask.test": {addrs("127.0.0.2")}},
		approver: func(ctx context.Context, q Question) (Verdict, error) {
			close(asked)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return Allow, nil // too late: the question was withdrawn
		}, timeout: time.Minute})
	c, _ := e.raw()
	fmt.Fprintf(c, "CONNECT ask.test:%d HTTP/1.1\r\nHost: ask.test:%d\r\n\r\n", ln.Addr().(*net.TCPAddr).Port, ln.Addr().(*net.TCPAddr).Port)
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the approver was never asked")
	}
	c.Close()
	select {
	case err := <-cause:
		if !errors.Is(err, ErrClientGone) {
			t.Fatalf("the approver's context ended with %v, want ErrClientGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the question stayed open after the client left")
	}
	ev := e.event()
	if ev.Kind != "connect" || ev.Decision != "deny" || ev.Reason != ReasonClientGone {
		t.Fatalf("audit event %+v, want a connect denied with %s", ev, ReasonClientGone)
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the destination was dialled %d times after the client left", n)
	}
}
