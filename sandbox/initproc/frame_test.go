package initproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	frames := []struct {
		t Type
		p []byte
	}{{Ready, []byte(`{"proto":1}`)}, {Stdout, []byte("hello")}, {Stderr, nil}, {Exit, []byte(`{"code":3}`)}}
	for _, f := range frames {
		if err := WriteFrame(&buf, f.t, f.p); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range frames {
		typ, p, err := ReadFrame(&buf)
		if err != nil || typ != f.t || !bytes.Equal(p, f.p) {
			t.Fatalf("got %q %q %v, want %q %q", typ, p, err, f.t, f.p)
		}
	}
	if _, _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("at end: %v, want EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"unknown type", []byte{'Z', 0, 0, 0, 0}, ErrFrame},
		{"oversized", []byte{'O', 0xff, 0xff, 0xff, 0xff}, ErrFrame},
		{"cut header", []byte{'O', 0}, io.ErrUnexpectedEOF},
		{"cut payload", []byte{'O', 0, 0, 0, 5, 'a'}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := ReadFrame(bytes.NewReader(tt.in)); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if err := WriteFrame(io.Discard, Stdout, make([]byte, maxPayload+1)); !errors.Is(err, ErrFrame) {
		t.Errorf("oversized write: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{'O', 0, 0, 0, 1, 'x'})
	f.Add([]byte{'X', 0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, p, err := ReadFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		WriteFrame(&out, typ, p)
		if !bytes.Equal(out.Bytes(), b[:out.Len()]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// TestMainProtocol drives Main the way the executor does, with a real
// command on this machine.
func TestMainProtocol(t *testing.T) {
	var req bytes.Buffer
	body, _ := json.Marshal(Req{Shell: "echo out; echo err >&2; cd /; exit 7", Workdir: "/tmp", Env: []string{"PATH=/usr/bin:/bin"}, Key: testKey})
	WriteFrame(&req, Request, body)
	// The executor keeps the stream open while the command runs.
	open, hold := io.Pipe()
	defer hold.Close()
	in := io.MultiReader(&req, open)
	var out, diag bytes.Buffer
	if code := Main(in, &out, &diag, nil); code != 0 {
		t.Fatalf("Main = %d: %s", code, diag.String())
	}
	var got []string
	var status []byte
	for {
		typ, p, err := ReadFrame(&out)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(typ)+":"+string(p))
		if typ == Exit {
			status = p
		}
	}
	if len(got) < 4 || got[0][0] != 'R' {
		t.Fatalf("frames %q", got)
	}
	if st, err := OpenExit(testKey, status); err != nil || st.Code != 7 || st.Cwd != "/" {
		t.Errorf("status %s: %+v %v", status, st, err)
	}
	joined := bytes.NewBufferString("")
	for _, g := range got {
		joined.WriteString(g + "|")
	}
	if !bytes.Contains(joined.Bytes(), []byte("O:out\n")) || !bytes.Contains(joined.Bytes(), []byte("E:err\n")) {
		t.Errorf("frames %q", got)
	}
}

// testKey is the request key of the tests.
var testKey = bytes.Repeat([]byte{0x5a}, KeyLen)

// TestOpenExit: only the status sealed under the request's key is taken.
func TestOpenExit(t *testing.T) {
	status := []byte(`{"code":0,"cwd":"/w"}`)
	sealed := SealExit(testKey, status)
	other := bytes.Repeat([]byte{1}, KeyLen)
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-3] ^= 1
	tests := []struct {
		name    string
		key     []byte
		payload []byte
		ok      bool
	}{
		{"sealed", testKey, sealed, true},
		{"bare JSON (forged)", testKey, status, false},
		{"other key", testKey, SealExit(other, status), false},
		{"tampered", testKey, tampered, false},
		{"seal only", testKey, sealed[:32], false},
		{"empty", testKey, nil, false},
		{"no key", nil, SealExit(nil, status), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := OpenExit(tc.key, tc.payload)
			if tc.ok != (err == nil) {
				t.Fatalf("OpenExit = %+v, %v; want ok %v", st, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, ErrUnsealed) {
				t.Fatalf("err = %v, want ErrUnsealed", err)
			}
			if tc.ok && (st.Code != 0 || st.Cwd != "/w") {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// TestMainRefusesKeyless: a request without a key runs nothing.
func TestMainRefusesKeyless(t *testing.T) {
	dir := t.TempDir()
	body, _ := json.Marshal(Req{Shell: "touch " + dir + "/ran", Workdir: "/tmp", Env: []string{"PATH=/usr/bin:/bin"}})
	var in, out, diag bytes.Buffer
	WriteFrame(&in, Request, body)
	if code := Main(&in, &out, &diag, nil); code == 0 {
		t.Fatal("Main accepted a request without a key")
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Fatal("the command ran")
	}
	var last Type
	for {
		typ, _, err := ReadFrame(&out)
		if err != nil {
			break
		}
		last = typ
	}
	if last != Fatal {
		t.Fatalf("last frame %q, want fatal", last)
	}
}
