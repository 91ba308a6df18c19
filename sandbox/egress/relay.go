package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Relay is the sandbox side of the proxy: it accepts plain TCP
// connections (agentbox init listens on 127.0.0.1 inside the container)
// and carries each one to the proxy's unix socket, after the preamble
// that names and authenticates the call. It never looks at the bytes.
type Relay struct {
	// Socket is the proxy's unix socket path.
	Socket string
	// Preamble is sent first on every connection.
	Preamble Preamble
}

// Serve relays every connection ln accepts until ctx ends.
func (r Relay) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("egress relay accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.relayConn(ctx, c)
		}()
	}
}

func (r Relay) relayConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.DialContext(ctx, "unix", r.Socket)
	if err != nil {
		body := "agentbox network: the egress proxy is not reachable; the sandbox has no other way out\n"
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nX-Agentbox-Error: proxy-unavailable\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	if _, err := io.WriteString(up, r.Preamble.String()); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		closeWrite(up)
		close(done)
	}()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(lingerAfterClose))
	<-done
}
