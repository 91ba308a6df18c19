package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
)

// MaxHeaderBytes bounds a request line plus headers.
const MaxHeaderBytes = 32 << 10

var errHeadTooLarge = errors.New("request head too large")

// peekHead returns the request line and headers (through the empty line)
// without consuming them, so the raw text can be judged before net/http
// parses it: net/http drops what the checks need to see (Host, a
// Content-Length next to Transfer-Encoding).
func peekHead(br *bufio.Reader) ([]byte, error) {
	n := 1
	for {
		_, err := br.Peek(n)
		b, _ := br.Peek(br.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return b[:i+4], nil
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, errHeadTooLarge
			}
			if len(b) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n = br.Buffered() + 1
		if n > br.Size() {
			return nil, errHeadTooLarge
		}
	}
}

// rawHead is the request head as sent.
type rawHead struct {
	method, target, proto string
	header                textproto.MIMEHeader // every value, nothing removed
}

// parseHead checks the framing of a request head and returns its parts:
// CRLF line ends only, no folded lines, header names made of token
// characters, exactly one Host (any number for CONNECT is 0 or 1), never
// Content-Length with Transfer-Encoding, one Content-Length value,
// Transfer-Encoding only "chunked".
func parseHead(head []byte) (rawHead, *Refusal) {
	var h rawHead
	bad := func(format string, a ...any) (rawHead, *Refusal) {
		return h, refusef(ReasonBadRequest, "", format, a...)
	}
	smuggle := func(format string, a ...any) (rawHead, *Refusal) {
		return h, refusef(ReasonSmuggling, "", format, a...)
	}
	text := string(head[:len(head)-4])
	if strings.ContainsAny(strings.ReplaceAll(text, "\r\n", ""), "\r\n\x00") {
		return smuggle("bare CR, LF or NUL in the request head")
	}
	lines := strings.Split(text, "\r\n")
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return bad("malformed request line")
	}
	h.method, h.target, h.proto = parts[0], parts[1], parts[2]
	if h.proto != "HTTP/1.1" && h.proto != "HTTP/1.0" {
		return bad("unsupported protocol %q", h.proto)
	}
	h.header = textproto.MIMEHeader{}
	for _, l := range lines[1:] {
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			return smuggle("folded or empty header line")
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" || !validToken(k) {
			return smuggle("malformed header line")
		}
		h.header.Add(textproto.CanonicalMIMEHeaderKey(k), strings.TrimSpace(v))
	}
	cl, te := h.header.Values("Content-Length"), h.header.Values("Transfer-Encoding")
	switch {
	case len(cl) > 0 && len(te) > 0:
		return smuggle("both Content-Length and Transfer-Encoding")
	case len(cl) > 1:
		return smuggle("more than one Content-Length")
	case len(te) > 1 || (len(te) == 1 && !strings.EqualFold(te[0], "chunked")):
		return smuggle("Transfer-Encoding other than a single \"chunked\"")
	}
	if len(cl) == 1 {
		if _, err := strconv.ParseUint(cl[0], 10, 63); err != nil {
			return smuggle("bad Content-Length")
		}
	}
	hosts := h.header.Values("Host")
	if len(hosts) > 1 || (len(hosts) == 0 && h.method != "CONNECT") {
		return bad("a request needs exactly one Host header")
	}
	return h, nil
}

func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// splitHostPort splits an authority, using def when it has no port.
func splitHostPort(authority string, def uint16) (string, uint16, error) {
	host, port := authority, ""
	if h, p, err := net.SplitHostPort(authority); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(authority, "[") && strings.HasSuffix(authority, "]") {
		host = authority[1 : len(authority)-1]
	} else if strings.Contains(authority, ":") {
		return "", 0, fmt.Errorf("bad authority %q", authority)
	}
	if port == "" {
		if def == 0 {
			return "", 0, fmt.Errorf("%q has no port", authority)
		}
		return host, def, nil
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("bad port in %q", authority)
	}
	return host, uint16(n), nil
}

// sameAuthority compares two authorities after normalizing host and
// default port.
func sameAuthority(a, b string, def uint16) bool {
	ha, pa, err1 := splitHostPort(a, def)
	hb, pb, err2 := splitHostPort(b, def)
	if err1 != nil || err2 != nil || pa != pb {
		return false
	}
	na, _, err1 := NormalizeHost(ha)
	nb, _, err2 := NormalizeHost(hb)
	return err1 == nil && err2 == nil && na == nb
}
