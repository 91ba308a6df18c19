package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
)

// drainingStdio sits between the stdio streams and go-sdk's newline-
// delimited JSON transport so that a client which writes its requests and
// closes its end at once (`printf '...' | agentbox mcp`) still gets every
// reply. go-sdk ends the session as soon as the reader reports EOF and drops
// the replies of requests still in flight; here the reader holds the EOF
// back until every request read so far has been answered on the writer (or
// ctx is done), then reports it.
//
// Requests are the messages with a "method" and an "id"; replies are the
// messages written with an "id" and no "method". Ids are compared in a
// canonical form (numbers by value, strings by text). A line that is not
// JSON is passed through untracked: the server answers it with an error
// that carries no id. Safe for use by one reader and one writer goroutine.
type drainingStdio struct {
	ctx context.Context

	in  *bufio.Reader
	out io.Writer

	mu      sync.Mutex
	pending map[string]int
	idle    chan struct{} // closed and replaced when pending becomes empty
	partial []byte        // written bytes not yet ended by a newline

	buf []byte // read bytes not yet handed out
	eof error  // the input's error, held back while requests are pending
}

func newDrainingStdio(ctx context.Context, in io.Reader, out io.Writer) *drainingStdio {
	return &drainingStdio{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]int{}, idle: make(chan struct{})}
}

// Read hands out the input line by line, noting each request's id; at the
// end of the input it waits for the pending replies before returning EOF.
func (d *drainingStdio) Read(p []byte) (int, error) {
	if len(d.buf) == 0 && d.eof == nil {
		line, err := d.in.ReadBytes('\n')
		d.track(line, +1)
		d.buf, d.eof = line, err
	}
	if len(d.buf) > 0 {
		n := copy(p, d.buf)
		d.buf = d.buf[n:]
		return n, nil
	}
	if errors.Is(d.eof, io.EOF) {
		d.waitIdle()
	}
	return 0, d.eof
}

// waitIdle blocks until no request is pending or ctx is done.
func (d *drainingStdio) waitIdle() {
	for {
		d.mu.Lock()
		n, idle := len(d.pending), d.idle
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-idle:
		case <-d.ctx.Done():
			return
		}
	}
}

// Close ends nothing: stdin and stdout belong to the process.
func (d *drainingStdio) Close() error { return nil }

// writer is the output side.
func (d *drainingStdio) writer() io.WriteCloser { return drainWriter{d} }

type drainWriter struct{ d *drainingStdio }

func (w drainWriter) Write(p []byte) (int, error) {
	n, err := w.d.out.Write(p)
	w.d.mu.Lock()
	w.d.partial = append(w.d.partial, p[:n]...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(w.d.partial, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, w.d.partial[:i])
		w.d.partial = w.d.partial[i+1:]
	}
	if len(w.d.partial) == 0 {
		w.d.partial = nil
	}
	w.d.mu.Unlock()
	for _, l := range lines {
		w.d.track(l, -1)
	}
	return n, err
}

func (drainWriter) Close() error { return nil }

// wireMsg is the part of a JSON-RPC message the tracker looks at.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// track counts the requests in a line read (delta +1) or the replies in a
// line written (delta -1).
func (d *drainingStdio) track(line []byte, delta int) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var msgs []wireMsg
	if line[0] == '[' {
		if json.Unmarshal(line, &msgs) != nil {
			return
		}
	} else {
		var m wireMsg
		if json.Unmarshal(line, &m) != nil {
			return
		}
		msgs = []wireMsg{m}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range msgs {
		id, ok := canonicalID(m.ID)
		if !ok {
			continue
		}
		isRequest := m.Method != nil
		switch {
		case delta > 0 && isRequest:
			d.pending[id]++
		case delta < 0 && !isRequest && d.pending[id] > 0:
			if d.pending[id]--; d.pending[id] == 0 {
				delete(d.pending, id)
			}
		}
	}
	if len(d.pending) == 0 {
		close(d.idle)
		d.idle = make(chan struct{})
	}
}

// canonicalID returns a JSON-RPC id in a form that compares equal however
// it was spelt (1, 1.0 and 1e0 are one id; "1" is another).
func canonicalID(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", false
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
}
