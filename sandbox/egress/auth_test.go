package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
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
