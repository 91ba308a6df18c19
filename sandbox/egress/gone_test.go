package egress

import (
	"context"
	"fmt"
	"net"
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
