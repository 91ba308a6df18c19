// Package initproc is the in-container init of the Docker backend and
// the wire protocol between it and the executor.
//
// The init runs as PID 1 of a throwaway container. It announces itself
// with a Ready frame, reads exactly one Request frame from its stdin (the
// container's attached stream), runs the command, streams its output as
// Stdout/Stderr frames, and ends with one Exit frame carrying the exit
// status, the final working directory and whether the memory limit
// killed something. Then it returns: PID 1 exiting takes every other
// process in the container with it, so nothing the command started
// (daemons included) outlives the command.
//
// A frame is one type byte, a big-endian uint32 payload length and the
// payload. Request, Ready and Exit payloads are JSON; output payloads are
// raw bytes.
package initproc

import (
	"encoding/binary"
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
)

// MaxPayload bounds a frame (the request carries stdin, up to 8 MiB).
const MaxPayload = 16 << 20

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
	if len(payload) > MaxPayload {
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
	case Ready, Request, Started, Stdout, Stderr, Exit, Fatal:
	default:
		return 0, nil, fmt.Errorf("%w: unknown type %#x", ErrFrame, h[0])
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxPayload {
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
const Proto = 2

// Req is the Request payload.
type Req struct {
	Argv    []string `json:"argv,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Workdir string   `json:"workdir"`
	Env     []string `json:"env"`
	Stdin   []byte   `json:"stdin,omitempty"`
	// TimeoutMS is a backstop: the executor kills the container at the
	// timeout; init kills the command itself a little later if it is
	// still alive.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Status is the Exit payload.
type Status struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	OOM    bool   `json:"oom,omitempty"`
	// Error says why the command could not start (exit 126/127).
	Error string `json:"error,omitempty"`
	// InitMicros is the time init spent from reading the request to
	// sending this status (the rest of a run is transport).
	InitMicros int64 `json:"init_us,omitempty"`
}
