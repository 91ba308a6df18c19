// Package audit owns agentbox's audit log: an append-only JSONL file under
// the workspace's state dir with one record per tool call. Each record
// carries the hash of the previous one and its own hash, so that Verify
// detects any record changed, removed, inserted or reordered after the
// fact. Inputs are masked before they are written: values that look like
// secrets never reach the log. A Log is safe for concurrent use, also
// across processes (appends hold an exclusive flock on the file).
package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Record is one call in the log.
type Record struct {
	Time    time.Time       `json:"time"`
	Session string          `json:"session"`
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input,omitempty"`
	Verdict *Verdict        `json:"verdict,omitempty"`
	// Decision is allow, ask or deny ("" when the call failed before the
	// permission stages); DecidedBy says who or what decided.
	Decision    string   `json:"decision,omitempty"`
	DecidedBy   string   `json:"decided_by,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Rule        string   `json:"rule,omitempty"`
	ContainerID string   `json:"container_id,omitempty"`
	ExitCode    *int     `json:"exit_code,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	Changed     []string `json:"changed,omitempty"`
	JournalID   string   `json:"journal_id,omitempty"`
	ErrorKind   string   `json:"error_kind,omitempty"`
	Error       string   `json:"error,omitempty"`
	// Prev is the previous record's Hash ("" for the first record).
	Prev string `json:"prev"`
	// Hash is sha256 over the record encoded with Hash empty.
	Hash string `json:"hash"`
}

// Verdict is the classifier's verdict as logged.
type Verdict struct {
	Class   string   `json:"class"`
	Reasons []Reason `json:"reasons,omitempty"`
}

// Reason is one part of a verdict.
type Reason struct {
	Rule    string `json:"rule"`
	Text    string `json:"text,omitempty"`
	Offset  int    `json:"offset"`
	Message string `json:"message"`
}

// ErrBroken is wrapped by Verify's errors.
var ErrBroken = errors.New("audit chain broken")

// Sum computes a record's hash.
func Sum(r Record) (string, error) {
	r.Hash = ""
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// Log is an audit log file.
type Log struct {
	path string
	mu   sync.Mutex
}

// Open returns the log at path (created on first Append). The directory
// is created with mode 0700.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &Log{path: path}, nil
}

// Path is the log file's path.
func (l *Log) Path() string { return l.path }

// Append masks nothing (the caller masks with MaskInput), links r to the
// last record, and appends it durably. It fills r.Prev and r.Hash.
func (l *Log) Append(ctx context.Context, r Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("audit: lock: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	prev, err := lastHash(f)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	r.Prev = prev
	if r.Hash, err = Sum(r); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	line = append(line, '\n')
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("audit: write: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit: sync: %w", err)
	}
	return nil
}

// lastHash reads the hash of the file's last complete record.
func lastHash(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	if size == 0 {
		return "", nil
	}
	const chunk = 64 << 10
	var tail []byte
	for off := size; off > 0; {
		n := int64(chunk)
		if off < n {
			n = off
		}
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return "", err
		}
		tail = append(buf, tail...)
		body := bytes.TrimRight(tail, "\n")
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 || off == 0 {
			last := body[i+1:]
			var r struct {
				Hash string `json:"hash"`
			}
			if err := json.Unmarshal(last, &r); err != nil || r.Hash == "" {
				return "", fmt.Errorf("%w: last record unreadable; run agentbox audit verify", ErrBroken)
			}
			return r.Hash, nil
		}
	}
	return "", nil
}

// Read returns every record in order.
func (l *Log) Read() ([]Record, error) {
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	var out []Record
	err = scan(f, func(n int, line []byte) error {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrBroken, n, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func scan(r io.Reader, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if len(line) == 0 || line[len(line)-1] != '\n' {
				return fmt.Errorf("%w: line %d is incomplete", ErrBroken, n)
			}
			if e := fn(n, bytes.TrimRight(line, "\n")); e != nil {
				return e
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Verify checks the whole chain and returns the number of records. The
// error names the first bad line.
func (l *Log) Verify() (int, error) {
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	return VerifyReader(f)
}

// VerifyReader checks a chain read from r.
func VerifyReader(r io.Reader) (int, error) {
	prev := ""
	count := 0
	err := scan(r, func(n int, line []byte) error {
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("%w: line %d: not a record: %v", ErrBroken, n, err)
		}
		if rec.Prev != prev {
			return fmt.Errorf("%w: line %d: previous hash %.12s does not match the record before it (%.12s): a record was removed, inserted or reordered", ErrBroken, n, rec.Prev, prev)
		}
		sum, err := Sum(rec)
		if err != nil {
			return err
		}
		if sum != rec.Hash {
			return fmt.Errorf("%w: line %d (call %s): content does not match its hash: the record was modified", ErrBroken, n, rec.CallID)
		}
		// Re-encoding must reproduce the line, or fields were added or
		// reformatted in a way the hash does not cover.
		canon, _ := json.Marshal(rec)
		if !bytes.Equal(canon, line) {
			return fmt.Errorf("%w: line %d (call %s): the line is not in canonical form: it was edited", ErrBroken, n, rec.CallID)
		}
		prev = rec.Hash
		count++
		return nil
	})
	return count, err
}
