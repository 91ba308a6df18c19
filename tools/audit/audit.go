// Package audit owns agentbox's audit log: an append-only JSONL file under
// the workspace's state dir with one record per tool call. Each record
// carries the hash of the previous one and its own hash, so that Verify
// detects any record changed, removed, inserted or reordered after the
// fact. Inputs are masked before they are written: values that look like
// secrets never reach the log. A Log is safe for concurrent use, also
// across processes (appends hold an exclusive flock on the file, and a
// Log trusts the last hash it wrote only while the file still ends where
// its write ended).
//
// Durability (group commit): Append returns once its record is written to
// the file, that is in the kernel's page cache, so a crash of the process
// loses nothing; a background fsync, started at once and covering every
// record written while it runs, puts it on disk within about two fsyncs (a
// few milliseconds). A power loss or kernel crash can thus lose the
// records of the last few milliseconds, as it could always cut the last
// one (Verify reports a cut record). For comparison, the auditd.conf
// shipped with the Linux audit daemon sets flush = incremental_async with
// freq = 50: an asynchronous flush every 50 records. Flush waits for the
// fsync, Close flushes; processes that exit after their calls close the
// log. An fsync that fails is logged (WithLogger) and sticky: the next
// Append, Flush and Close return it (ErrNotDurable), so a later call
// cannot look audited while the disk refuses the log. SyncEachRecord
// restores an fsync inside every Append.
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
	"log/slog"
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
	// Network is set on the record of one network connection a call's
	// command opened through the egress proxy (Tool is "network").
	Network *Connection `json:"network,omitempty"`
	// Prev is the previous record's Hash ("" for the first record).
	Prev string `json:"prev"`
	// Hash is sha256 over the record encoded with Hash empty.
	Hash string `json:"hash"`
}

// NetworkTool is the Tool of a network connection's record.
const NetworkTool = "network"

// LargeUpload is the bytes sent on one connection from which its record
// is flagged: data can leave through any allowed domain.
const LargeUpload = 1 << 20

// Connection is one connection through the egress proxy: the decision
// and who made it are the record's Decision and DecidedBy, a refusal's
// reason its Reason.
type Connection struct {
	Kind     string `json:"kind"`             // connect, http or refused
	Method   string `json:"method,omitempty"` // of a forwarded HTTP request
	Host     string `json:"host,omitempty"`
	Port     uint16 `json:"port,omitempty"`
	Addr     string `json:"addr,omitempty"` // the address dialed
	BytesOut int64  `json:"bytes_out"`      // sent to the destination
	BytesIn  int64  `json:"bytes_in"`
	// LargeUpload: BytesOut reached LargeUpload.
	LargeUpload bool `json:"large_upload,omitempty"`
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

// Log is an audit log file. It is safe for concurrent use; several Logs,
// in one process or several, may append to one file.
type Log struct {
	path     string
	logger   *slog.Logger
	syncEach bool
	sync     func(*os.File) error // f.Sync; tests inject failures

	mu sync.Mutex // serializes this Log's appends; guards the fields below
	f  *os.File   // kept open between appends; nil before the first and after Close
	// ino is f's inode; end and last are the file's size and last hash
	// after this Log's last write, trusted while the file still has that
	// size under the lock (another writer's append always grows it).
	ino      uint64
	end      int64
	last     string
	haveLast bool
	written  uint64        // records written to f
	synced   uint64        // of those, how many are known durable
	syncErr  error         // sticky: a deferred fsync failed
	flushing bool          // a flusher goroutine is running
	progress chan struct{} // closed and replaced when synced, syncErr or flushing change
}

// Option configures a Log.
type Option func(*Log)

// WithLogger logs the failures of deferred fsyncs (they are also returned
// by the next Append, Flush and Close).
func WithLogger(l *slog.Logger) Option { return func(x *Log) { x.logger = l } }

// SyncEachRecord makes every Append fsync before it returns, as the log
// did before group commit: slower (a few ms per record on a disk) and
// durable at once.
func SyncEachRecord() Option { return func(x *Log) { x.syncEach = true } }

// Open returns the log at path (created on first Append). The directory
// is created with mode 0700. Close releases the file and makes every
// record durable.
func Open(path string, opts ...Option) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{path: path, sync: (*os.File).Sync, progress: make(chan struct{})}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// Path is the log file's path.
func (l *Log) Path() string { return l.path }

// ErrNotDurable is wrapped by the errors of Append, Flush and Close after
// a deferred fsync failed: records this Log returned from Append for may
// be lost. It is sticky: the Log refuses further appends.
var ErrNotDurable = errors.New("audit log not durable")

// Append masks nothing (the caller masks with MaskInput), links r to the
// last record, and appends it. It fills r.Prev and r.Hash. When it
// returns the record is in the file (a crash of this process loses
// nothing); it reaches the disk a few milliseconds later, when a
// background fsync that covers every record written meanwhile completes
// (group commit; see the package doc). Flush and Close wait for that.
func (l *Log) Append(ctx context.Context, r Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.syncErr != nil {
		return l.syncErr
	}
	if err := l.openLocked(); err != nil {
		return err
	}
	f := l.f
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("audit: lock: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	prev := l.last
	if !l.haveLast || fi.Size() != l.end {
		// Another writer appended since (or the file changed under us):
		// read the hash it left.
		l.haveLast = false
		if prev, err = lastHash(f, fi.Size()); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	r.Prev = prev
	line, err := encode(&r)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("audit: write: %w", err)
	}
	l.last, l.end, l.haveLast = r.Hash, fi.Size()+int64(len(line)), true
	l.written++
	if l.syncEach {
		if err := l.sync(f); err != nil {
			l.failLocked(err)
			return l.syncErr
		}
		l.synced = l.written
		return nil
	}
	if !l.flushing {
		l.flushing = true
		go l.flushLoop(f)
	}
	return nil
}

// openLocked opens the file, or reopens it when the path now names
// another file (it was removed or replaced): records go where the path
// points, as they would with a fresh open per append.
func (l *Log) openLocked() error {
	for {
		fi, err := os.Stat(l.path)
		if l.f != nil && err == nil && inode(fi) == l.ino {
			return nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit: %w", err)
		}
		if l.f != nil {
			// Drain the flusher of the old file, then let it go.
			if l.flushing {
				l.waitLocked(context.Background())
				continue
			}
			l.f.Close()
			l.f, l.haveLast = nil, false
			if l.syncErr != nil {
				return l.syncErr
			}
		}
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		fi, err = f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("audit: %w", err)
		}
		l.f, l.ino, l.haveLast = f, inode(fi), false
		return nil
	}
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// flushLoop fsyncs f until every record written to it is durable; one
// fsync covers all the records written before it started.
func (l *Log) flushLoop(f *os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncErr == nil && l.synced < l.written && l.f == f {
		target := l.written
		l.mu.Unlock()
		err := l.sync(f)
		l.mu.Lock()
		if err != nil {
			l.failLocked(err)
			break
		}
		l.synced = target
		l.notifyLocked()
	}
	l.flushing = false
	l.notifyLocked()
}

// failLocked makes a failed fsync sticky and logs it.
func (l *Log) failLocked(err error) {
	l.syncErr = fmt.Errorf("audit: %w: fsync of %s failed, the last records may be lost: %w", ErrNotDurable, l.path, err)
	if l.logger != nil {
		l.logger.Error("audit log fsync failed", "path", l.path, "err", err)
	}
	l.notifyLocked()
}

func (l *Log) notifyLocked() {
	close(l.progress)
	l.progress = make(chan struct{})
}

// waitLocked waits, with l.mu released, for the next change of the
// flusher's state or for ctx.
func (l *Log) waitLocked(ctx context.Context) error {
	ch := l.progress
	l.mu.Unlock()
	defer l.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush waits until every record this Log appended before the call is
// on disk. It returns the error of a failed fsync (wrapping
// ErrNotDurable), or ctx's.
func (l *Log) Flush(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// While records wait for their fsync a flusher runs (Append starts
	// one), unless an fsync failed.
	for target := l.written; l.syncErr == nil && l.synced < target && l.flushing; {
		if err := l.waitLocked(ctx); err != nil {
			return err
		}
	}
	return l.syncErr
}

// Close flushes (see Flush) and closes the file. A later Append opens it
// again. A failed fsync is reported by every Close after it.
func (l *Log) Close() error {
	err := l.Flush(context.Background())
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.waitLocked(context.Background())
	}
	if l.f != nil {
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("audit: %w", cerr)
		}
		l.f, l.haveLast = nil, false
	}
	return err
}

// encode fills r.Hash and returns r's line. The hash is the last field:
// the line is the encoding Sum hashes with the hash put in, which saves
// encoding the record twice.
func encode(r *Record) ([]byte, error) {
	r.Hash = ""
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	s := sha256.Sum256(b)
	r.Hash = hex.EncodeToString(s[:])
	const empty = `"hash":""}`
	if !bytes.HasSuffix(b, []byte(empty)) {
		return nil, fmt.Errorf("record encoding does not end with %s", empty)
	}
	line := make([]byte, 0, len(b)+len(r.Hash)+1)
	line = append(line, b[:len(b)-len(`"}`)]...)
	line = append(line, r.Hash...)
	line = append(line, `"}`+"\n"...)
	return line, nil
}

// lastHash reads the hash of the last complete record of f, size bytes.
func lastHash(f *os.File, size int64) (string, error) {
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
	return verifyReader(f)
}

// verifyReader checks a chain read from r.
func verifyReader(r io.Reader) (int, error) {
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
