package egress

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// goHello returns the first flight a crypto/tls client sends for sni.
func goHello(t testing.TB, sni string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: sni == ""})
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_ = c.Handshake()
		a.Close()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, _, err := readClientHello(b, 0)
	if err != nil {
		t.Fatalf("reading Go's ClientHello: %v", err)
	}
	return raw
}

// handHello builds a minimal ClientHello record with the given extensions.
func handHello(exts ...[]byte) []byte {
	var body []byte
	body = append(body, 3, 3)
	body = append(body, make([]byte, 32)...)
	body = append(body, 0)             // session id
	body = append(body, 0, 2, 0x13, 1) // one cipher suite
	body = append(body, 1, 0)          // null compression
	var e []byte
	for _, x := range exts {
		e = append(e, x...)
	}
	body = binary.BigEndian.AppendUint16(body, uint16(len(e)))
	body = append(body, e...)
	msg := []byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	msg = append(msg, body...)
	rec := []byte{0x16, 3, 1}
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(msg)))
	return append(rec, msg...)
}

// shortMsg declares a handshake message one byte shorter than its record.
func shortMsg() []byte {
	b := handHello()
	b[8]--
	return b
}

func ext(typ uint16, data []byte) []byte {
	out := binary.BigEndian.AppendUint16(nil, typ)
	out = binary.BigEndian.AppendUint16(out, uint16(len(data)))
	return append(out, data...)
}

func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0)
		list = binary.BigEndian.AppendUint16(list, uint16(len(n)))
		list = append(list, n...)
	}
	return ext(extServerName, append(binary.BigEndian.AppendUint16(nil, uint16(len(list))), list...))
}

// splitRecords re-frames one handshake record as records of n bytes.
func splitRecords(rec []byte, n int) []byte {
	msg := rec[5:]
	var out []byte
	for len(msg) > 0 {
		k := min(n, len(msg))
		out = append(out, 0x16, 3, 3)
		out = binary.BigEndian.AppendUint16(out, uint16(k))
		out = append(out, msg[:k]...)
		msg = msg[k:]
	}
	return out
}

func TestReadClientHello(t *testing.T) {
	goRaw := goHello(t, "Good.Example")
	for _, tc := range []struct {
		name    string
		in      []byte
		want    ClientHello
		wantErr error
	}{
		{"crypto/tls client", goRaw, ClientHello{ServerName: "Good.Example"}, nil},
		{"crypto/tls without SNI", goHello(t, ""), ClientHello{}, nil},
		{"split over records", splitRecords(goRaw, 7), ClientHello{ServerName: "Good.Example"}, nil},
		{"hand-made with ECH", handHello(sniExt("public.example"), ext(extECH, []byte{0, 1, 2})), ClientHello{ServerName: "public.example", ECH: true}, nil},
		{"hand-made with ESNI", handHello(ext(extESNI, []byte{0, 1})), ClientHello{ECH: true}, nil},
		{"no extensions", handHello(), ClientHello{}, nil},
		{"two host names", handHello(sniExt("a.example", "b.example")), ClientHello{}, ErrBadHello},
		{"duplicate SNI extension", handHello(sniExt("a.example"), sniExt("b.example")), ClientHello{}, ErrBadHello},
		{"plain HTTP", []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), ClientHello{}, ErrNotTLS},
		{"nested CONNECT", []byte("CONNECT a.example:443 HTTP/1.1\r\n\r\n"), ClientHello{}, ErrNotTLS},
		{"truncated", goRaw[:len(goRaw)-3], ClientHello{}, ErrBadHello},
		{"trailing data in the record", shortMsg(), ClientHello{}, ErrBadHello},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, ch, err := readClientHello(bytes.NewReader(tc.in), 0)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v; want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || ch != tc.want {
				t.Fatalf("= %+v, %v; want %+v", ch, err, tc.want)
			}
			if !bytes.Equal(raw, tc.in) {
				t.Fatalf("raw bytes (%d) differ from the input (%d)", len(raw), len(tc.in))
			}
		})
	}
}

func TestReadClientHelloCap(t *testing.T) {
	big := splitRecords(handHello(ext(0x1234, make([]byte, 60000))), 1<<14)
	if _, _, err := readClientHello(io.MultiReader(bytes.NewReader(big)), 4096); !errors.Is(err, ErrBadHello) {
		t.Fatalf("err = %v; want the size cap", err)
	}
}

func FuzzReadClientHello(f *testing.F) {
	f.Add(goHello(f, "a.example"))
	f.Add(handHello(sniExt("x.example"), ext(extECH, nil)))
	f.Add(splitRecords(handHello(sniExt("x.example")), 3))
	f.Add([]byte("CONNECT x:1 HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, ch, err := readClientHello(bytes.NewReader(b), 0)
		if len(raw) > len(b) || !bytes.Equal(raw, b[:len(raw)]) {
			t.Fatalf("raw is not a prefix of the input")
		}
		if err == nil && ch.ServerName != "" {
			// The same message must parse the same when re-framed.
			_, ch2, err2 := readClientHello(bytes.NewReader(splitRecords(raw[:5+int(binary.BigEndian.Uint16(raw[3:5]))], 5)), 0)
			if len(raw) == 5+int(binary.BigEndian.Uint16(raw[3:5])) && (err2 != nil || ch2 != ch) {
				t.Fatalf("re-framed hello differs: %+v %v vs %+v", ch2, err2, ch)
			}
		}
	})
}
