package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// A client that hangs up while an allowed destination is being dialled
// ends the dial; the audit record says the client left, not that the
// destination failed to answer (which would blame a healthy host).
func TestProxyClientGoneWhileDialling(t *testing.T) {
	dialling := make(chan struct{}, 1)
	e := newProxyEnv(t, envConfig{allow: []string{"slow.test", "198.51.100.7"},
		names: map[string][][]netip.Addr{"slow.test": {addrs("198.51.100.7")}},
		dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dialling <- struct{}{}
			<-ctx.Done()
			return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
		}})
	c, _ := e.raw()
	fmt.Fprintf(c, "CONNECT slow.test:443 HTTP/1.1\r\nHost: slow.test:443\r\n\r\n")
	select {
	case <-dialling:
	case <-time.After(5 * time.Second):
		t.Fatal("the destination was never dialled")
	}
	c.Close()
	ev := e.event()
	if ev.Kind != "connect" || ev.Decision != "deny" || ev.Reason != ReasonClientGone || ev.By != "proxy" {
		t.Fatalf("audit event %+v, want a connect denied by the proxy with %s", ev, ReasonClientGone)
	}
}

// echoOnce listens on 127.0.0.2 and, for each connection, reads want
// bytes, reports them, and answers "pong".
func echoOnce(t *testing.T, want int) (int, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, want)
				n, _ := io.ReadFull(c, b)
				got <- b[:n]
				if n == want {
					_, _ = c.Write([]byte("pong"))
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, got
}

// While a tunnel's approval is pending the watch for a hang-up reads the
// client: whatever the client sends meanwhile (its ClientHello before the
// 200, part of it, or bytes that land as the watch stops) reaches the
// destination whole and in order, still passes the SNI check, and the
// read deadline the watch used does not stay on the tunnel.
func TestProxyBytesDuringApproval(t *testing.T) {
	hello := goHello(t, "ask.test")
	cases := []struct {
		name string
		// before is sent right after the CONNECT head (during the
		// approval), after once the 200 is read.
		before, after []byte
		sni           string
		wantReason    string
	}{
		{name: "whole hello before the 200", before: hello},
		{name: "half the hello before the 200", before: hello[:len(hello)/2], after: hello[len(hello)/2:]},
		{name: "one byte before the 200", before: hello[:1], after: hello[1:]},
		{name: "hello after the 200", after: hello},
		{name: "wrong server name before the 200", sni: "evil.test", wantReason: ReasonSNIMismatch},
		{name: "not TLS before the 200", before: []byte("GET / HTTP/1.1\r\nHost: ask.test\r\n\r\n"), wantReason: ReasonNotTLS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sni != "" {
				tc.before = goHello(t, tc.sni)
			}
			want := append(append([]byte{}, tc.before...), tc.after...)
			port, got := echoOnce(t, len(want))
			release := make(chan struct{})
			e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"},
				names: map[string][][]netip.Addr{"ask.test": {addrs("127.0.0.2")}},
				approver: func(ctx context.Context, q Question) (Verdict, error) {
					select {
					case <-release:
						return Allow, nil
					case <-ctx.Done():
						return Deny, ctx.Err()
					}
				}, timeout: time.Minute})
			c, br := e.raw()
			fmt.Fprintf(c, "CONNECT ask.test:%d HTTP/1.1\r\nHost: ask.test:%d\r\n\r\n%s", port, port, tc.before)
			time.Sleep(50 * time.Millisecond) // the watch is reading the client now
			close(release)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			time.Sleep(50 * time.Millisecond) // a stuck past read deadline would cut the tunnel
			if _, err := c.Write(tc.after); err != nil {
				t.Fatal(err)
			}
			if tc.wantReason != "" {
				ev := e.event()
				if ev.Decision != "deny" || ev.Reason != tc.wantReason {
					t.Fatalf("audit event %+v, want deny %s", ev, tc.wantReason)
				}
				select {
				case b := <-got:
					if len(b) > 0 {
						t.Fatalf("the destination received %d bytes of a refused tunnel", len(b))
					}
				case <-time.After(200 * time.Millisecond):
				}
				return
			}
			pong := make([]byte, 4)
			if _, err := io.ReadFull(br, pong); err != nil || string(pong) != "pong" {
				t.Fatalf("answer %q %v", pong, err)
			}
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("the destination received %d bytes that differ from the %d sent", len(b), len(want))
			}
			c.Close()
			if ev := e.event(); ev.Decision != "allow" || ev.BytesOut != int64(len(want)) || ev.BytesIn != 4 {
				t.Fatalf("audit event %+v, want allow with %d bytes out and 4 in", ev, len(want))
			}
		})
	}
}

// A client that sends part of its ClientHello before the 200 and then
// hangs up has left all the same: the question is withdrawn.
func TestProxyClientGoneAfterEarlyBytes(t *testing.T) {
	hello := goHello(t, "ask.test")
	for _, early := range [][]byte{hello[:1], hello[:len(hello)/2], hello} {
		t.Run(fmt.Sprintf("%d bytes", len(early)), func(t *testing.T) {
			asked := make(chan struct{})
			cause := make(chan error, 1)
			e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"},
				names: map[string][][]netip.Addr{"ask.test": {addrs("127.0.0.2")}},
				approver: func(ctx context.Context, q Question) (Verdict, error) {
					close(asked)
					<-ctx.Done()
					cause <- context.Cause(ctx)
					return Allow, nil
				}, timeout: time.Minute})
			c, _ := e.raw()
			fmt.Fprintf(c, "CONNECT ask.test:443 HTTP/1.1\r\nHost: ask.test:443\r\n\r\n%s", early)
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
			if ev := e.event(); ev.Decision != "deny" || ev.Reason != ReasonClientGone || e.dials.Load() != 0 {
				t.Fatalf("audit event %+v after %d dials, want deny %s and no dial", ev, e.dials.Load(), ReasonClientGone)
			}
		})
	}
}

// The ClientHello lands while the approver answers, so while the watch
// is being stopped (its read cut by a past deadline): no byte is lost
// or reordered, whichever of the two comes first.
func TestProxyHelloRacesApprovalAnswer(t *testing.T) {
	hello := goHello(t, "ask.test")
	port, got := echoOnce(t, len(hello))
	asked := make(chan chan struct{})
	e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"},
		names: map[string][][]netip.Addr{"ask.test": {addrs("127.0.0.2")}},
		approver: func(ctx context.Context, q Question) (Verdict, error) {
			release := make(chan struct{})
			asked <- release
			<-release
			return Allow, nil
		}, timeout: time.Minute})
	for i := range 30 {
		c, br := e.raw()
		fmt.Fprintf(c, "CONNECT ask.test:%d HTTP/1.1\r\nHost: ask.test:%d\r\n\r\n", port, port)
		release := <-asked
		time.Sleep(time.Duration(i%3) * time.Millisecond)
		wrote := make(chan error, 1)
		go func() {
			_, err := c.Write(hello[:i*len(hello)/30])
			wrote <- err
		}()
		close(release)
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("round %d: CONNECT: %v %v", i, resp, err)
		}
		if _, err := c.Write(hello[i*len(hello)/30:]); err != nil {
			t.Fatal(err)
		}
		pong := make([]byte, 4)
		if _, err := io.ReadFull(br, pong); err != nil || string(pong) != "pong" {
			t.Fatalf("round %d: answer %q %v", i, pong, err)
		}
		if b := <-got; !bytes.Equal(b, hello) {
			t.Fatalf("round %d: the destination received bytes that differ from the ClientHello", i)
		}
		c.Close()
		if ev := e.event(); ev.Decision != "allow" || ev.BytesOut != int64(len(hello)) {
			t.Fatalf("round %d: audit event %+v", i, ev)
		}
	}
}

// A client that sends more before the 200 than the proxy buffers is not
// taken for gone (the watch stops when its buffer is full): the tunnel is
// judged on what it sent, here not TLS.
func TestProxyEarlyBytesFillBuffer(t *testing.T) {
	port, _ := echoOnce(t, 1)
	e := newProxyEnv(t, envConfig{allow: []string{"127.0.0.2"},
		names: map[string][][]netip.Addr{"ask.test": {addrs("127.0.0.2")}},
		approver: func(ctx context.Context, q Question) (Verdict, error) {
			select {
			case <-time.After(200 * time.Millisecond):
				return Allow, nil
			case <-ctx.Done():
				return Deny, ctx.Err()
			}
		}, timeout: time.Minute})
	c, br := e.raw()
	fmt.Fprintf(c, "CONNECT ask.test:%d HTTP/1.1\r\nHost: ask.test:%d\r\n\r\n", port, port)
	go func() { _, _ = c.Write(bytes.Repeat([]byte("x"), MaxHeaderBytes+4096)) }()
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if ev := e.event(); ev.Decision != "deny" || ev.Reason != ReasonNotTLS {
		t.Fatalf("audit event %+v, want deny %s", ev, ReasonNotTLS)
	}
}
