package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Errors of reading a ClientHello.
var (
	ErrNotTLS   = errors.New("not a TLS ClientHello")
	ErrBadHello = errors.New("malformed TLS ClientHello")
)

// Extension numbers the proxy looks at.
const (
	extServerName = 0x0000
	extECH        = 0xfe0d // encrypted_client_hello
	extESNI       = 0xffce // encrypted_server_name, ECH's predecessor
)

// ClientHello is what the proxy needs from a TLS ClientHello.
type ClientHello struct {
	// ServerName is the host_name of the server_name extension, as sent
	// ("" when absent).
	ServerName string
	// ECH: an encrypted_client_hello (or the older encrypted_server_name)
	// extension is present, so the name that counts is hidden from the
	// proxy.
	ECH bool
}

// MaxHelloBytes bounds what the proxy buffers of a ClientHello.
const MaxHelloBytes = 64 << 10

// readClientHello reads TLS records from r until one whole ClientHello
// handshake message has arrived (it may span records) and parses it. raw
// is every byte read, to be replayed upstream unchanged. At most max
// bytes are read (MaxHelloBytes when max <= 0).
func readClientHello(r io.Reader, max int) (raw []byte, ch ClientHello, err error) {
	if max <= 0 {
		max = MaxHelloBytes
	}
	var msg []byte
	hdr := make([]byte, 5)
	for {
		if k, err := io.ReadFull(r, hdr); err != nil {
			raw = append(raw, hdr[:k]...)
			if len(raw) == 0 && errors.Is(err, io.EOF) {
				return raw, ch, fmt.Errorf("%w: connection closed", ErrNotTLS)
			}
			return raw, ch, fmt.Errorf("%w: %w", ErrBadHello, err)
		}
		raw = append(raw, hdr...)
		if hdr[0] != 0x16 || hdr[1] != 3 {
			return raw, ch, ErrNotTLS
		}
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		if n == 0 || n > 1<<14 {
			return raw, ch, fmt.Errorf("%w: record length %d", ErrBadHello, n)
		}
		if len(raw)+n > max {
			return raw, ch, fmt.Errorf("%w: larger than %d bytes", ErrBadHello, max)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if k, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start+k], ch, fmt.Errorf("%w: %w", ErrBadHello, err)
		}
		msg = append(msg, raw[start:]...)
		if len(msg) < 4 {
			continue
		}
		if msg[0] != 1 {
			return raw, ch, fmt.Errorf("%w: handshake type %d", ErrNotTLS, msg[0])
		}
		want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
		if len(msg) < want {
			continue
		}
		if len(msg) > want {
			return raw, ch, fmt.Errorf("%w: data after the ClientHello", ErrBadHello)
		}
		ch, err = parseClientHello(msg[4:])
		return raw, ch, err
	}
}

// reader is a bounds-checked cursor.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

func (r *reader) vec8() *reader  { return &reader{b: r.bytes(r.u8()), bad: r.bad} }
func (r *reader) vec16() *reader { return &reader{b: r.bytes(r.u16()), bad: r.bad} }

// parseClientHello parses a ClientHello body (after the 4-byte handshake
// header). Duplicate extensions and more than one host_name are errors.
func parseClientHello(body []byte) (ClientHello, error) {
	var ch ClientHello
	r := &reader{b: body}
	r.bytes(2 + 32) // legacy_version, random
	if sid := r.vec8(); len(sid.b) > 32 {
		return ch, fmt.Errorf("%w: session id", ErrBadHello)
	}
	if cs := r.vec16(); len(cs.b) < 2 || len(cs.b)%2 != 0 {
		return ch, fmt.Errorf("%w: cipher suites", ErrBadHello)
	}
	if cm := r.vec8(); len(cm.b) < 1 {
		return ch, fmt.Errorf("%w: compression methods", ErrBadHello)
	}
	if r.bad {
		return ch, ErrBadHello
	}
	if len(r.b) == 0 {
		return ch, nil // no extensions at all
	}
	exts := r.vec16()
	if r.bad || len(r.b) != 0 {
		return ch, fmt.Errorf("%w: extensions length", ErrBadHello)
	}
	seen := map[int]bool{}
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.vec16()
		if exts.bad {
			return ch, fmt.Errorf("%w: extension", ErrBadHello)
		}
		if seen[typ] {
			return ch, fmt.Errorf("%w: duplicate extension %#04x", ErrBadHello, typ)
		}
		seen[typ] = true
		switch typ {
		case extECH, extESNI:
			ch.ECH = true
		case extServerName:
			name, err := parseSNI(data)
			if err != nil {
				return ch, err
			}
			ch.ServerName = name
		}
	}
	return ch, nil
}

func parseSNI(data *reader) (string, error) {
	list := data.vec16()
	if data.bad || len(data.b) != 0 {
		return "", fmt.Errorf("%w: server_name", ErrBadHello)
	}
	name := ""
	for len(list.b) > 0 {
		typ := list.u8()
		v := list.vec16()
		if list.bad {
			return "", fmt.Errorf("%w: server_name entry", ErrBadHello)
		}
		if typ != 0 {
			continue
		}
		if name != "" || len(v.b) == 0 {
			return "", fmt.Errorf("%w: server_name host_name", ErrBadHello)
		}
		name = string(v.b)
	}
	return name, nil
}
