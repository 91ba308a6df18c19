package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
)

// benchEnv: an HTTPS server on 127.0.0.2 for bulk.test serving body,
// reached directly and through the relay and the proxy (CONNECT, SNI
// check, relay of TLS bytes), one new connection per request.
func benchEnv(b *testing.B, body []byte) (direct, proxied *http.Client, target string) {
	ca := newTestCA(b)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		b.Fatal(err)
	}
	cert := ca.leaf(b, "bulk.test")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}))
	b.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	e := newProxyEnv(b, envConfig{allow: []string{"bulk.test", "127.0.0.2"},
		names: map[string][][]netip.Addr{"bulk.test": {addrs("127.0.0.2")}}})
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-e.events:
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() { close(done) })
	tc := &tls.Config{RootCAs: ca.pool}
	pu, _ := url.Parse("http://" + e.relay)
	direct = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.2:%d", port))
		}}}
	proxied = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true, Proxy: http.ProxyURL(pu)}}
	return direct, proxied, fmt.Sprintf("https://bulk.test:%d/", port)
}

func benchGet(b *testing.B, c *http.Client, u string, size int) {
	b.SetBytes(int64(size))
	for b.Loop() {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(size) {
			b.Fatalf("read %d of %d", n, size)
		}
	}
}

// BenchmarkEgressBulk: throughput of a 32 MiB HTTPS download, direct vs
// through the proxy (target: proxied >= 0.8x direct).
func BenchmarkEgressBulk(b *testing.B) {
	body := make([]byte, 32<<20)
	direct, proxied, u := benchEnv(b, body)
	b.Run("direct", func(b *testing.B) { benchGet(b, direct, u, len(body)) })
	b.Run("proxy", func(b *testing.B) { benchGet(b, proxied, u, len(body)) })
}

// BenchmarkEgressConnection: a small HTTPS request on a new connection,
// direct vs through the proxy; the difference is the latency the proxy
// adds per connection (target: <= 2 ms).
func BenchmarkEgressConnection(b *testing.B) {
	direct, proxied, u := benchEnv(b, []byte("ok"))
	b.Run("direct", func(b *testing.B) { benchGet(b, direct, u, 2) })
	b.Run("proxy", func(b *testing.B) { benchGet(b, proxied, u, 2) })
}
