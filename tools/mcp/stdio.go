package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// maxLine is the largest request line handed to the server (0: no
	// limit). A longer line is read to its end without being kept and
	// answered here with a JSON-RPC error; the session goes on.
	maxLine int
	// wmu serialises whole lines written to out (the server's replies and
	// the refusals of oversized lines).
	wmu sync.Mutex

	mu      sync.Mutex
	pending map[string]int
	idle    chan struct{} // closed and replaced when pending becomes empty
	partial []byte        // written bytes not yet ended by a newline

	buf []byte // read bytes not yet handed out
	eof error  // the input's error, held back while requests are pending
}

func newDrainingStdio(ctx context.Context, in io.Reader, out io.Writer, maxLine int) *drainingStdio {
	return &drainingStdio{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, maxLine: maxLine, pending: map[string]int{}, idle: make(chan struct{})}
}

// Read hands out the input line by line, noting each request's id; at the
// end of the input it waits for the pending replies before returning EOF.
func (d *drainingStdio) Read(p []byte) (int, error) {
	if len(d.buf) == 0 && d.eof == nil {
		line, err := d.readLine()
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

// readLine reads the next line of at most maxLine bytes. A longer one is
// consumed without being kept, refused on the output, and skipped.
func (d *drainingStdio) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := d.in.ReadSlice('\n')
		if d.maxLine > 0 && len(line)+len(chunk) > d.maxLine {
			var sc frameScanner
			sc.feed(line)
			sc.feed(chunk)
			n := len(line) + len(chunk)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = d.in.ReadSlice('\n')
				sc.feed(chunk)
				n += len(chunk)
			}
			d.refuse(sc, n)
			if err != nil {
				return nil, err
			}
			line = nil
			continue
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// refuse answers an oversized request with a JSON-RPC error naming the
// limit; a notification (no id) gets no answer.
func (d *drainingStdio) refuse(sc frameScanner, n int) {
	id := sc.id
	if !sc.hasID {
		if !sc.batch {
			return
		}
		id = []byte("null")
	}
	msg := fmt.Sprintf("this request is %s, more than agentbox takes in one message (%s: tools.max_input_bytes plus %s for the message around the input); nothing was run. Split the work into smaller calls, for example write a large file in parts.",
		sizeText(n), sizeText(d.maxLine), sizeText(frameSlack))
	reply, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{-32600, msg}})
	d.wmu.Lock()
	defer d.wmu.Unlock()
	_, _ = d.out.Write(append(reply, '\n'))
}

// frameSlack is what a request line may hold beyond its tool input: the
// JSON-RPC envelope, the tool name, metadata.
const frameSlack = 1 << 20

// MaxLine is the largest request line the stdio transport accepts for a
// tool input cap of maxInput bytes.
func maxLine(maxInput int) int {
	if maxInput <= 0 {
		return 0
	}
	return maxInput + frameSlack
}

func sizeText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// frameScanner finds the top-level "id" of a JSON-RPC message fed to it
// in pieces, keeping none of the rest: enough to answer a message too
// large to read whole.
type frameScanner struct {
	depth    int
	inString bool
	escaped  bool
	batch    bool
	started  bool
	// at depth 1: expecting a key (true) or a value (false)
	wantKey bool
	key     []byte // the current top-level key, up to a few bytes
	keyLong bool
	inValue bool // reading the value of the top-level "id"
	hasID   bool
	id      []byte
}

func (s *frameScanner) feed(b []byte) {
	for _, c := range b {
		s.step(c)
	}
}

func (s *frameScanner) step(c byte) {
	if s.inValue {
		if s.inString || (c != ',' && c != '}' && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			if len(s.id) < 256 {
				s.id = append(s.id, c)
			}
		}
	}
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.depth == 1 && s.wantKey {
				s.wantKey = false
			}
			if s.inValue {
				s.endValue()
			}
			return
		}
		if s.depth == 1 && s.wantKey && !s.escaped && c != '\\' {
			if len(s.key) < 8 {
				s.key = append(s.key, c)
			} else {
				s.keyLong = true
			}
		}
		return
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 && s.wantKey {
			s.key, s.keyLong = s.key[:0], false
		}
	case '{', '[':
		if !s.started {
			s.started, s.batch = true, c == '['
		}
		s.depth++
		if s.depth == 1 && c == '{' {
			s.wantKey = true
		}
	case '}', ']':
		if s.inValue {
			s.endValue()
		}
		s.depth--
	case ':':
		if s.depth == 1 && !s.batch && string(s.key) == "id" && !s.keyLong && !s.hasID {
			s.inValue, s.id = true, s.id[:0]
		}
	case ',':
		if s.inValue {
			s.endValue()
		}
		if s.depth == 1 {
			s.wantKey = true
		}
	}
}

// endValue ends the id value; only a string or a number is an id.
func (s *frameScanner) endValue() {
	s.inValue = false
	if _, ok := canonicalID(s.id); ok && len(s.id) < 256 {
		s.hasID = true
		s.id = append([]byte(nil), s.id...)
	}
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
	w.d.wmu.Lock()
	n, err := w.d.out.Write(p)
	w.d.wmu.Unlock()
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
