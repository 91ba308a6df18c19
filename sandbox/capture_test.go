package sandbox

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
		drop   int64
	}{
		{"empty", 10, nil, "", 0},
		{"fits", 10, []string{"abc", "def"}, "abcdef", 0},
		{"exact", 6, []string{"abcdef"}, "abcdef", 0},
		{"one over", 6, []string{"abcdefg"}, "abc\n[... 1 bytes omitted ...]\nefg", 1},
		{"many small", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n[... 3 bytes omitted ...]\nfg", 3},
		{"big then small", 4, []string{"0123456789", "x"}, "01\n[... 7 bytes omitted ...]\n9x", 7},
		{"odd limit", 5, []string{"0123456789"}, "01\n[... 5 bytes omitted ...]\n789", 5},
		{"zero", 0, []string{"abc"}, "\n[... 3 bytes omitted ...]\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(tt.limit)
			for _, w := range tt.writes {
				c.Write([]byte(w))
			}
			if got := string(c.Bytes()); got != tt.want || c.Dropped() != tt.drop {
				t.Errorf("got %q dropped %d, want %q %d", got, c.Dropped(), tt.want, tt.drop)
			}
		})
	}
}

// TestCaptureRandom checks head and tail against the naive answer for
// random write patterns.
func TestCaptureRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		limit := rng.Intn(64)
		c := NewCapture(limit)
		var all bytes.Buffer
		for j := rng.Intn(20); j > 0; j-- {
			p := make([]byte, rng.Intn(40))
			for k := range p {
				p[k] = byte('a' + rng.Intn(26))
			}
			c.Write(p)
			all.Write(p)
		}
		b := all.Bytes()
		want := string(b)
		if len(b) > limit {
			h := limit / 2
			want = string(b[:h]) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", len(b)-limit) + string(b[len(b)-(limit-h):])
		}
		if got := string(c.Bytes()); got != want {
			t.Fatalf("limit %d: got %q want %q", limit, got, want)
		}
		if c.Total() != int64(len(b)) {
			t.Fatalf("total %d want %d", c.Total(), len(b))
		}
	}
}
