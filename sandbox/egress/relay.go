package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
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
	// OnRefusal, when set, receives the body of a refusal that is the
	// first answer on a connection (many tools show only "403"; init
	// writes it to the command's stderr).
	OnRefusal func(text string)
}

// Serve relays every connection ln accepts until ctx ends.
func (r Relay) Serve(ctx context.Context, ln net.Listener) error {
	return serveEach(ctx, ln, func(c net.Conn) { r.relayConn(ctx, c) })
}

// watchFirst passes the first response head from the proxy to the
// client and, when it is a refusal (X-Agentbox-Error), reads its small
// body too and reports it. It returns the reader for the rest.
func (r Relay) watchFirst(up net.Conn, c net.Conn) io.Reader {
	br := bufio.NewReaderSize(up, 4096)
	status, err := br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(status, []byte("HTTP/1.1 ")) || len(status) < 12 || status[9] == '1' || status[9] == '2' || status[9] == '3' {
		_, _ = c.Write(status)
		return br
	}
	var head bytes.Buffer
	head.Write(status)
	tp := textproto.NewReader(br)
	h, err := tp.ReadMIMEHeader()
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	_, _ = c.Write(head.Bytes())
	if err != nil || h.Get("X-Agentbox-Error") == "" {
		return br
	}
	n, _ := strconv.Atoi(h.Get("Content-Length"))
	body := make([]byte, min(max(n, 0), 4096))
	k, _ := io.ReadFull(br, body)
	_, _ = c.Write(body[:k])
	if text := strings.TrimSpace(string(body[:k])); strings.HasPrefix(text, "agentbox network: ") {
		r.OnRefusal(text)
	}
	return br
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
	ur := io.Reader(up)
	if r.OnRefusal != nil {
		ur = r.watchFirst(up, c)
	}
	_, _ = io.Copy(c, ur)
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(lingerAfterClose))
	<-done
}
