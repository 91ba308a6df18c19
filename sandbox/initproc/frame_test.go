package initproc

import (
	"bytes"
	"errors"
	"io"
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
	if err := WriteFrame(io.Discard, Stdout, make([]byte, MaxPayload+1)); !errors.Is(err, ErrFrame) {
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
	WriteFrame(&req, Request, []byte(`{"shell":"echo out; echo err >&2; cd /; exit 7","workdir":"/tmp","env":["PATH=/usr/bin:/bin"]}`))
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
	if !bytes.Contains(status, []byte(`"code":7`)) || !bytes.Contains(status, []byte(`"cwd":"/"`)) {
		t.Errorf("status %s", status)
	}
	joined := bytes.NewBufferString("")
	for _, g := range got {
		joined.WriteString(g + "|")
	}
	if !bytes.Contains(joined.Bytes(), []byte("O:out\n")) || !bytes.Contains(joined.Bytes(), []byte("E:err\n")) {
		t.Errorf("frames %q", got)
	}
}
