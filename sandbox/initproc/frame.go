// Package initproc is the in-container init of the Docker backend and
// the wire protocol between it and the executor.
//
// The init runs as PID 1 of a throwaway container. It announces itself
// with a [Ready] frame, reads exactly one [Request] frame from its stdin (the
// container's attached stream), runs the command, streams its output as
// [Stdout]/[Stderr] frames, and ends with one [Exit] frame carrying the exit
// status, the final working directory and whether the memory limit
// killed something. Then it returns: PID 1 exiting takes every other
// process in the container with it, so nothing the command started
// (daemons included) outlives the command.
//
// A frame is one type byte, a big-endian uint32 payload length and the
// payload. Request and Ready payloads are JSON; the Exit payload is JSON
// sealed with the request's key (see [SealExit]); output and data payloads
// are raw bytes.
//
// The Exit frame is sealed because init's stdout is not always out of the
// command's reach. Under runc init is not dumpable, so the command (same
// uid) cannot open /proc/1/fd; under gVisor (Debian's 2022 runsc) it can,
// and could write a well-formed Exit frame into init's stdout. The
// executor sends a fresh random key in each request; init keeps it in
// its memory only (never in its environment or on disk), which the
// command cannot read: not through /proc/1/mem or ptrace (init is not
// dumpable, and is the command's ancestor, which ptrace scope 1, gVisor's
// default, refuses too) nor process_vm_readv. A frame the command forges
// fails the seal and the executor refuses the result; what the command
// can still do is garble the stream, which fails its own call.
//
// Besides a command, a request may ask init to write one file ([Req].Write,
// see write.go) without starting any process. Bulk input — a command's
// stdin, a file's content — follows the request as [Data] frames of at most
// [DataChunk] bytes, ended by an empty Data frame, so that no frame grows
// with the input. A gated write's content is followed by one [Commit]
// frame: the executor's word that the file may become visible (see
// [WriteGated], and docs/gated-writes.md for the whole protocol).
package initproc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Type is a frame type.
type Type byte

// Frame types.
const (
	Ready   Type = 'R' // init → executor: waiting for a request
	Request Type = 'Q' // executor → init: the command
	Started Type = 'S' // init → executor: request taken (empty payload)
	Stdout  Type = 'O' // init → executor: a chunk of stdout
	Stderr  Type = 'E' // init → executor: a chunk of stderr
	Exit    Type = 'X' // init → executor: final status; last frame
	Fatal   Type = 'F' // init → executor: init itself failed (text)
	Data    Type = 'D' // executor → init: a chunk of stdin or file content; empty = end
	// Commit follows a gated write's content (WriteReq.Gated): an empty
	// payload lets init make the file visible, a non-empty one (the
	// reason) withdraws the write.
	Commit Type = 'C' // executor → init
)

// maxPayload bounds a frame.
const maxPayload = 16 << 20

// DataChunk is the largest Data payload the executor sends.
const DataChunk = 1 << 20

const headerLen = 5

// ErrFrame: a malformed or oversized frame.
var ErrFrame = errors.New("bad frame")

// AppendFrame appends one encoded frame to dst.
func AppendFrame(dst []byte, t Type, payload []byte) []byte {
	var h [headerLen]byte
	h[0] = byte(t)
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// WriteFrame writes one frame in a single Write call.
func WriteFrame(w io.Writer, t Type, payload []byte) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("%w: payload of %d bytes", ErrFrame, len(payload))
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, headerLen+len(payload)), t, payload))
	return err
}

// ReadFrame reads one frame. io.EOF means a clean end between frames;
// io.ErrUnexpectedEOF a stream cut inside one.
func ReadFrame(r io.Reader) (Type, []byte, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	t := Type(h[0])
	switch t {
	case Ready, Request, Started, Stdout, Stderr, Exit, Fatal, Data, Commit:
	default:
		return 0, nil, fmt.Errorf("%w: unknown type %#x", ErrFrame, h[0])
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxPayload {
		return 0, nil, fmt.Errorf("%w: payload of %d bytes", ErrFrame, n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, p, nil
}

// frameWriter serializes frames from several goroutines and can be shut
// so that late output is dropped once the exit frame is on its way.
type frameWriter struct {
	mu   sync.Mutex
	w    io.Writer
	shut bool
	err  error
}

func (f *frameWriter) write(t Type, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut {
		return io.ErrClosedPipe
	}
	if f.err == nil {
		f.err = WriteFrame(f.w, t, p)
	}
	return f.err
}

// last writes the final frame and refuses everything after it.
func (f *frameWriter) last(t Type, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shut = true
	if f.err == nil {
		f.err = WriteFrame(f.w, t, p)
	}
	return f.err
}

// ReadyInfo is the Ready payload.
type ReadyInfo struct {
	PID   int  `json:"pid"`
	Bash  bool `json:"bash"`
	Proto int  `json:"proto"`
}

// Proto is the protocol version; bump on incompatible changes.
const Proto = 6

// KeyLen is the length of Req.Key.
const KeyLen = 32

// ErrUnsealed: an Exit payload that does not carry the request key's
// seal (forged by the command, or garbled).
var ErrUnsealed = errors.New("exit status not sealed with the request's key")

// exitMAC is the seal of an Exit payload: HMAC-SHA256 under key of the
// frame type and the status JSON.
func exitMAC(key, status []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte{byte(Exit)})
	m.Write(status)
	return m.Sum(nil)
}

// SealExit returns the Exit payload for the status JSON: its seal under
// key, then the JSON.
func SealExit(key, status []byte) []byte {
	return append(exitMAC(key, status), status...)
}

// OpenExit checks an Exit payload against key and decodes its status.
func OpenExit(key, payload []byte) (Status, error) {
	var st Status
	if len(key) != KeyLen || len(payload) < sha256.Size {
		return st, ErrUnsealed
	}
	mac, body := payload[:sha256.Size], payload[sha256.Size:]
	if !hmac.Equal(mac, exitMAC(key, body)) {
		return st, ErrUnsealed
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%w: exit status: %v", ErrFrame, err)
	}
	return st, nil
}

// Req is the Request payload.
type Req struct {
	Argv    []string `json:"argv,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Workdir string   `json:"workdir"`
	Env     []string `json:"env"`
	// Stdin: the command's standard input follows as Data frames (else
	// it is /dev/null).
	Stdin bool `json:"stdin,omitempty"`
	// Write, when set, replaces the command: init writes one file whose
	// content follows as Data frames (Argv and Shell are empty).
	Write *WriteReq `json:"write,omitempty"`
	// Key seals the Exit frame (KeyLen random bytes, fresh for each
	// request); a request without one is refused.
	Key []byte `json:"key"`
	// MemoryLimit, in bytes, is enforced by init itself when set (the
	// executor sets it under gVisor only; see memwatch.go).
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// TimeoutMS is a backstop: the executor kills the container at the
	// timeout; init kills the command itself a little later if it is
	// still alive.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Egress, when set, makes init listen on 127.0.0.1:Port for the
	// command's proxy traffic while it runs (see egress.go).
	Egress *EgressReq `json:"egress,omitempty"`
}

// Status is the Exit payload.
type Status struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	OOM    bool   `json:"oom,omitempty"`
	// Error says why the command could not start (exit 126/127), or why
	// a write failed (code 1).
	Error string `json:"error,omitempty"`
	// Errno names the errno of a failed write ("EROFS"), and ErrPath the
	// workspace-relative path it concerns (a symlinked parent, the file).
	Errno   string `json:"errno,omitempty"`
	ErrPath string `json:"err_path,omitempty"`
	// InitMicros is the time init spent from reading the request to
	// sending this status (the rest of a run is transport).
	InitMicros int64 `json:"init_us,omitempty"`
	// Reusable says init takes another request in this container: only
	// after a write (no process of the agent's ran in it) whose content
	// stream was read to its end.
	Reusable bool `json:"reusable,omitempty"`
	// Ungate says a gated write wrote nothing because a parent directory
	// was missing: init creates directories only once the write may be
	// visible, and the content had gone by then. The executor sends the
	// write again, ungated (its gate has opened).
	Ungate bool `json:"ungate,omitempty"`
}

// WriteData sends data as Data frames of at most DataChunk bytes, then the
// empty Data frame that ends it. Header and payload go in separate Write
// calls, so that w must not be shared with another writer meanwhile.
func WriteData(w io.Writer, data []byte) error {
	var h [headerLen]byte
	h[0] = byte(Data)
	for len(data) > 0 {
		n := min(len(data), DataChunk)
		binary.BigEndian.PutUint32(h[1:], uint32(n))
		if _, err := w.Write(h[:]); err != nil {
			return err
		}
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	binary.BigEndian.PutUint32(h[1:], 0)
	_, err := w.Write(h[:])
	return err
}

// dataReader reads the payloads of Data frames from r as one stream; the
// empty Data frame is its io.EOF. Any other frame, or the stream ending
// before that frame, is an error.
type dataReader struct {
	r    io.Reader
	buf  []byte
	done bool
}

func (d *dataReader) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		if d.done {
			return 0, io.EOF
		}
		t, b, err := ReadFrame(d.r)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if t != Data {
			return 0, fmt.Errorf("%w: got %q inside data", ErrFrame, t)
		}
		if len(b) == 0 {
			d.done = true
		}
		d.buf = b
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}
