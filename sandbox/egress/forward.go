package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// hopHeaders are connection-scoped and never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "Te", "Trailer", "Upgrade"}

func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				h.Del(k)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward serves one absolute-form HTTP request on its own upstream
// connection and reports whether the client connection may carry another
// request.
func (s *Server) forward(ctx context.Context, c Caller, conn net.Conn, br *bufio.Reader, req *http.Request, rh rawHead) bool {
	ev := s.event(c, "http", time.Now())
	ev.Method = req.Method
	u := req.URL
	switch {
	case u == nil || !u.IsAbs() || u.Host == "":
		s.refuse(conn, ev, refusef(ReasonBadRequest, "", "not a proxy request: the target must be an absolute http:// URL (or use CONNECT)"))
		return false
	case u.User != nil || strings.Contains(u.Host, "@"):
		s.refuse(conn, ev, refusef(ReasonUserinfo, "", "credentials in the URL are refused; send them in a header"))
		return false
	case u.Scheme != "http":
		s.refuse(conn, ev, refusef(ReasonUnsupported, "", "%s:// through the proxy: use CONNECT for https", u.Scheme))
		return false
	case !sameAuthority(rh.header.Get("Host"), u.Host, 80):
		s.refuse(conn, ev, refusef(ReasonHostMismatch, "", "Host header %q differs from the URL's host %q", rh.header.Get("Host"), u.Host))
		return false
	case rh.header.Get("Upgrade") != "" || headerHasToken(rh.header, "Connection", "upgrade"):
		s.refuse(conn, ev, refusef(ReasonUnsupported, "", "protocol upgrades are not carried; use https (CONNECT)"))
		return false
	}
	host, port, err := splitHostPort(u.Host, 80)
	if err != nil {
		s.refuse(conn, ev, refusef(ReasonBadRequest, "", "%v", err))
		return false
	}
	// Not watched for the client leaving (as a tunnel is): a client may
	// half-close after its request and still read the answer.
	up, t, err := s.gate.Connect(ctx, c, host, port)
	ev.SetTarget(host, port, t, err)
	if err != nil {
		s.refuse(conn, ev, AsRefusal(err))
		return false
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	ev.Decision = "allow"
	keep := !req.Close
	stripHop(req.Header)
	req.Host = u.Host
	req.Close = true // one request per upstream connection
	// A destination that accepts and then stays silent must not hold
	// the connection forever: every read from it waits at most the idle
	// timeout.
	cu := &counter{Conn: up, idle: s.idle}
	if req.Body != nil && req.Body != http.NoBody {
		// net/http closes the body when the write fails, and closing
		// it reads the rest: up to a length the client chose, before
		// the client hears anything.
		req.Body = io.NopCloser(req.Body)
	}
	if err := req.Write(cu); err != nil {
		ev.BytesOut = cu.out
		s.refuse(conn, ev, refusef(ReasonDial, "", "sending the request failed"))
		return false
	}
	hl := &headLimit{r: cu}
	ubr := bufio.NewReader(hl)
	for {
		// The whole head, not just each read, within the idle timeout:
		// nothing is written to the client before it is complete, so a
		// client that left is not noticed while a destination trickles.
		hl.left, cu.until = MaxResponseHeadBytes, time.Now().Add(s.idle)
		resp, err := http.ReadResponse(ubr, req)
		hl.left, cu.until = -1, time.Time{} // the body is not bounded here
		if err != nil {
			ev.BytesOut, ev.BytesIn = cu.out, cu.in
			s.refuse(conn, ev, refusef(ReasonDial, "", "no valid response from %s", t.Host))
			return false
		}
		interim := resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols
		if !interim {
			keep = keep && (resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0)
		}
		stripHop(resp.Header)
		// Only the proxy's own refusals carry it (init repeats their
		// text to the command as agentbox's word).
		resp.Header.Del("X-Agentbox-Error")
		resp.Close = !keep
		if resp.Body != http.NoBody {
			// When the client is gone, net/http closes the body, and
			// closing it reads the rest (a length the destination
			// chose) to throw it away.
			resp.Body = io.NopCloser(resp.Body)
		}
		err = resp.Write(conn)
		resp.Body.Close()
		if err != nil {
			keep = false
		}
		if !interim || err != nil {
			break
		}
	}
	ev.BytesOut, ev.BytesIn = cu.out, cu.in
	s.finish(ev)
	return keep
}

func headerHasToken(h textproto.MIMEHeader, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// MaxResponseHeadBytes bounds a response's status line and headers
// from a destination (net/http's reader itself has no bound).
const MaxResponseHeadBytes = 64 << 10

var errResponseHeadTooLarge = errors.New("response head too large")

// headLimit reads from r; while left is not negative, at most left
// bytes more.
type headLimit struct {
	r    io.Reader
	left int64
}

func (h *headLimit) Read(p []byte) (int, error) {
	if h.left >= 0 {
		if h.left == 0 {
			return 0, errResponseHeadTooLarge
		}
		p = p[:min(int64(len(p)), h.left)]
	}
	n, err := h.r.Read(p)
	if h.left >= 0 {
		h.left -= int64(n)
	}
	return n, err
}

// counter counts the bytes through an upstream connection; with idle
// set, each read and each write waits at most that long, and no read
// waits past until when that is set.
type counter struct {
	net.Conn
	out, in int64
	idle    time.Duration
	until   time.Time
}

func (c *counter) Write(p []byte) (int, error) {
	if c.idle > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	}
	n, err := c.Conn.Write(p)
	c.out += int64(n)
	return n, err
}

func (c *counter) Read(p []byte) (int, error) {
	d := c.until
	if next := time.Now().Add(c.idle); c.idle > 0 && (d.IsZero() || next.Before(d)) {
		d = next
	}
	if !d.IsZero() {
		_ = c.Conn.SetReadDeadline(d)
	}
	n, err := c.Conn.Read(p)
	c.in += int64(n)
	return n, err
}
