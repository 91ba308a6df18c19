package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
			d := newDrainingStdio(context.Background(), strings.NewReader(tc.input), &out, 0)
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
	d := newDrainingStdio(ctx, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), io.Discard, 0)
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

// TestStdioLargeFrames sends real JSON-RPC frames over the stdio transport:
// a tools/call larger than go-sdk's own 16 MiB line bound but within
// tools.max_input_bytes is served; one beyond the limit gets a JSON-RPC
// error naming the limit, and the session goes on (a ping after it is
// answered, and so is a call of the largest accepted size).
func TestStdioLargeFrames(t *testing.T) {
	const maxInput = 18 << 20
	s, err := NewServer(Options{Workspace: "/ws", Tools: testTools(), Call: (&testPipeline{}).call, MaxInputBytes: maxInput})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := s.serveIO(ctx, inR, outW)
		outW.CloseWithError(fmt.Errorf("the server ended: %v", err))
		served <- err
	}()
	replies := bufio.NewReaderSize(outR, 1<<20)
	send := func(frame string) {
		t.Helper()
		go func() { _, _ = io.WriteString(inW, frame+"\n") }()
	}
	recv := func() map[string]any {
		t.Helper()
		line, err := replies.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading a reply: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%v: %.200s", err, line)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := recv(); r["error"] != nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id, size int) string {
		// The id last, as the TypeScript SDK writes it.
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"Echo","arguments":{"text":%q}},"id":%d}`, strings.Repeat("a", size), id)
	}
	for _, tc := range []struct {
		id, size int
		ok       bool
	}{
		{2, 17 << 20, true},          // above go-sdk's 16 MiB line bound
		{3, maxInput + 2<<20, false}, // beyond the limit: refused
		{4, maxInput - 1<<10, true},  // the session goes on
	} {
		send(call(tc.id, tc.size))
		r := recv()
		if r["id"] != float64(tc.id) {
			t.Fatalf("call %d: reply for id %v", tc.id, r["id"])
		}
		if !tc.ok {
			e, _ := r["error"].(map[string]any)
			if msg, _ := e["message"].(string); !strings.Contains(msg, "tools.max_input_bytes") || !strings.Contains(msg, "nothing was run") {
				t.Fatalf("call %d: %v", tc.id, e)
			}
			continue
		}
		res, _ := r["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) != 1 || res["isError"] == true {
			t.Fatalf("call %d: %.300v", tc.id, r)
		}
		if text, _ := content[0].(map[string]any)["text"].(string); len(text) != tc.size {
			t.Fatalf("call %d: echoed %d bytes, sent %d", tc.id, len(text), tc.size)
		}
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if r := recv(); r["id"] != float64(5) || r["error"] != nil {
		t.Fatalf("ping after the refusal: %v", r)
	}
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end with its input")
	}
}

func TestFrameScannerID(t *testing.T) {
	for _, tc := range []struct {
		frame, id string
		has       bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"x"}`, `7`, true},
		{`{"method":"x","params":{"id":9,"s":"\"id\":3"},"id":"a\"b"}`, `"a\"b"`, true},
		{`{"method":"notifications/x","params":{"id":1}}`, ``, false},
		{`{"id" : 12 , "method":"x"}`, `12`, true},
		{`{"id":null,"method":"x"}`, ``, false},
	} {
		var s frameScanner
		for i := 0; i < len(tc.frame); i += 3 { // fed in pieces
			s.feed([]byte(tc.frame[i:min(i+3, len(tc.frame))]))
		}
		if s.hasID != tc.has || (tc.has && string(s.id) != tc.id) {
			t.Errorf("%s: id %q %v, want %q %v", tc.frame, s.id, s.hasID, tc.id, tc.has)
		}
	}
}
