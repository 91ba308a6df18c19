package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadPreambleKeepsCause: a caller that sends no preamble is refused
// as ErrUnauthenticated, and the read error (a deadline, a closed
// connection) stays visible to errors.Is.
func TestReadPreambleKeepsCause(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := a.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		r     io.Reader
		cause error
	}{
		{"silent caller", a, os.ErrDeadlineExceeded},
		{"cut line", strings.NewReader(PreambleMagic + " token=x"), io.EOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readPreamble(bufio.NewReader(tt.r))
			if !errors.Is(err, ErrUnauthenticated) || !errors.Is(err, tt.cause) {
				t.Fatalf("err = %v, want ErrUnauthenticated wrapping %v", err, tt.cause)
			}
		})
	}
}

// Listen refuses a socket directory others can enter or that is a
// symlink, instead of chmod'ing whatever is at the path.
func TestListenRefusesOpenOrLinkedDir(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(open); err == nil {
		ln.Close()
		t.Fatal("listened in a directory others can enter")
	}
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(link); err == nil {
		ln.Close()
		t.Fatal("listened through a symlink")
	}
	ln, err := Listen(filepath.Join(base, "new"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
