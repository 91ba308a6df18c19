package mcp

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestCanonicalID(t *testing.T) {
	cases := []struct {
		raw  string
		want string
		ok   bool
	}{
		{`1`, "n1", true},
		{`1.0`, "n1", true},
		{`1e0`, "n1", true},
		{`"1"`, "s1", true},
		{`"a\u0062"`, "sab", true},
		{`null`, "", false},
		{``, "", false},
		{`{}`, "", false},
	}
	for _, tc := range cases {
		got, ok := canonicalID([]byte(tc.raw))
		if got != tc.want || ok != tc.ok {
			t.Errorf("canonicalID(%s) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDrainingStdioHoldsEOF: the reader reports the end of the input only
// once every request read has been answered on the writer.
func TestDrainingStdioHoldsEOF(t *testing.T) {
	cases := []struct {
		name    string
		input   string
		replies []string // written, in order, after the input is read
	}{
		{"single", `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}},
		{"notification only", `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n", nil},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":"x","method":"b"}]` + "\n",
			[]string{`{"jsonrpc":"2.0","id":"x","result":{}}`, `{"jsonrpc":"2.0","id":1.0,"error":{"code":1,"message":"m"}}`}},
		{"reply split across writes", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, []string{`{"jsonrpc":"2.0",`, `"id":2,"result":{}}`}},
		{"not json", "garbage\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			d := newDrainingStdio(context.Background(), strings.NewReader(tc.input), &out)
			done := make(chan error, 1)
			go func() {
				_, err := io.ReadAll(d)
				done <- err
			}()
			for _, r := range tc.replies {
				select {
				case err := <-done:
					t.Fatalf("input ended (%v) before the reply %s", err, r)
				case <-time.After(50 * time.Millisecond):
				}
				w := r
				if !strings.HasSuffix(r, "{") && !strings.HasSuffix(r, ",") {
					w += "\n"
				}
				if _, err := d.writer().Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("input did not end after every reply was written")
			}
		})
	}
}

// TestDrainingStdioStopsOnCancel: a request never answered does not hold
// the end of the input past ctx.
func TestDrainingStdioStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := newDrainingStdio(ctx, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), io.Discard)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(d)
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("input ended with a request pending")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the input")
	}
}
