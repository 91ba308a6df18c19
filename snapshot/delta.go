package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// The manifest delta.
//
// The manifest of the last scan (the index file) is rewritten whole by a
// whole-workspace scan, which costs what the tree costs to encode. A
// file-scoped call, an undo or a rollback changes a few paths of it: their
// new entries are appended as one record to index.delta beside it, and
// loadIndex reads the index and replays the delta's records over it.
//
// The delta file starts with deltaMagic and the SHA-256 of the index file
// it extends (the index's manifest blob name); it is ignored whole when
// that is not the index beside it (a whole save replaced the index since:
// the new index holds everything the delta said). Each record is
//
//	uint32 n (little-endian) | payload (n bytes) | uint32 CRC-32C of the n and the payload
//
// and its payload is a kind byte (deltaUpdates) and a uvarint count of
// operations, each an op byte (deltaSet, deltaDelete), a uvarint length
// and the path, and for deltaSet the entry in the index's encoding
// (putEntry). A record is applied whole or not at all.
//
// Records are appended with O_APPEND; the file is noted for the next
// syncStore like the index (every commit does one), so the manifest an
// entry leaves is durable before the next entry commits, as with the
// whole index. A record that does not check out (torn by a crash in
// the middle of an append, damaged, or of a kind this version does not
// know) ends the replay: the records before it are applied, which is the
// manifest as some earlier call left it — a consistent past state, like an
// index whose last save had not reached the disk. Its entries pair stats
// with hashes recorded together, so as a stat cache it stays right; a
// path it is stale for is looked at again by the next scan (a manifest
// read back from disk is never one the change capture vouches for, so
// that scan walks the whole tree). Nothing is appended after such a
// record (it would be unreachable): the next update writes the whole
// manifest instead.
//
// A whole save (saveIndex of a scan's result, or compaction once the
// delta passes deltaLimit) writes the index and leaves the old delta in
// place: its header names the old index, so it no longer applies, and
// the next update replaces it by rename. Removing it after the rename
// could, on a file system that reorders the two, leave the old index
// without its delta. The one delta that must go first is one whose header
// names the content being written (the current delta, when a whole save
// writes the very index it extends): it is removed before the rename.
//
// The manifest blob of a whole call or checkpoint (manifestHash) is the
// index file hard-linked: an index with delta records applied has none
// until it is saved whole, which those callers do when manifestHash is "".

const (
	deltaName      = "index.delta"
	deltaMagic     = "agentbox-manifest-delta-1\n"
	deltaHeaderLen = len(deltaMagic) + sha256.Size
	// deltaMaxRecord bounds a record's length: a larger one is damage.
	deltaMaxRecord = 64 << 20
)

// Record kinds and operations.
const (
	deltaUpdates = 1
	deltaSet     = 1
	deltaDelete  = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// deltaState describes the delta file applied to the cached manifest.
type deltaState struct {
	id   fileID // its identity as read or last written (zero: there is none)
	recs int    // records of it applied to the cached manifest
	size int64  // its length up to the end of the last good record
	// ok: it extends the index file and ends with a good record, so a
	// record may be appended.
	ok bool
}

// errStaleDelta says that a delta file extends another index.
var errStaleDelta = errors.New("manifest delta: extends another index")

// deltaLimit is the size past which the delta is folded into the index
// (a whole save): a quarter of the index, so that loading costs at most a
// quarter more, and the whole saves are paid for by many small ones.
func deltaLimit(indexSize int64) int64 { return max(deltaMinLimit, indexSize/4) }

// deltaMinLimit is the least deltaLimit (tests lower it).
var deltaMinLimit int64 = 64 << 10

// withUpdates returns a clone of ix with updates applied (a nil entry
// removes the path), remembering which paths changed: saveIndex then
// appends just those to the delta if ix is the manifest on disk.
func (ix *index) withUpdates(updates map[string]*ientry) *index {
	return ix.withUpdatesIn(nil, updates)
}

// withUpdatesIn is withUpdates building the result in m, a copy of ix's
// map made ahead (nil: copied now).
func (ix *index) withUpdatesIn(m map[string]*ientry, updates map[string]*ientry) *index {
	var post *index
	if m == nil {
		post = ix.clone()
	} else {
		from := ix.from
		if from == nil {
			from = ix
		}
		post = &index{entries: m, from: from}
	}
	paths := make([]string, 0, len(updates))
	for p, e := range updates {
		if e == nil {
			delete(post.entries, p)
		} else {
			post.entries[p] = e
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	post.deltaOf, post.deltaPaths = ix, paths
	return post
}

func deltaHeader(base []byte) []byte {
	return append([]byte(deltaMagic), base...)
}

// encodeDeltaRecord frames one record holding ix's entries at paths (a
// path ix lacks is deleted).
func encodeDeltaRecord(ix *index, paths []string) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0, 0}) // the length, set below
	b.WriteByte(deltaUpdates)
	var tmp [binary.MaxVarintLen64]byte
	uv := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	uv(uint64(len(paths)))
	for _, p := range paths {
		e := ix.entries[p]
		if e == nil {
			b.WriteByte(deltaDelete)
		} else {
			b.WriteByte(deltaSet)
		}
		uv(uint64(len(p)))
		b.WriteString(p)
		if e != nil {
			putEntry(&b, e)
		}
	}
	out := b.Bytes()
	binary.LittleEndian.PutUint32(out, uint32(len(out)-4))
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crcTable))
}

type deltaOp struct {
	path string
	e    *ientry // nil: delete
}

// decodeDeltaRecord reads a record's payload; what names what is wrong.
func decodeDeltaRecord(payload []byte) (ops []deltaOp, what string) {
	if payload[0] != deltaUpdates {
		return nil, fmt.Sprintf("unknown record kind %d", payload[0])
	}
	d := &entryReader{r: bytes.NewReader(payload[1:])}
	n := d.uv()
	if n > uint64(len(payload)) {
		return nil, "bad count"
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		op, _ := d.r.ReadByte()
		if op != deltaSet && op != deltaDelete {
			return nil, fmt.Sprintf("unknown operation %d", op)
		}
		p := d.str(d.uv())
		if p == "" && d.err == nil {
			return nil, "empty path"
		}
		var e *ientry
		if op == deltaSet {
			if e, what = d.entry(); what != "" {
				return nil, what
			}
		}
		ops = append(ops, deltaOp{path: p, e: e})
	}
	if d.err != nil {
		return nil, "short record"
	}
	if d.r.Len() != 0 {
		return nil, "trailing bytes"
	}
	return ops, ""
}

// replayDelta applies the records of a delta file (data) to ix, the
// manifest read from the index file whose SHA-256 is base. It returns how
// many records it applied and where the last of them ends; err says why
// it stopped before the end of data (errStaleDelta: data extends another
// index, and nothing was applied).
func replayDelta(ix *index, data []byte, base []byte) (n int, end int, err error) {
	bad := func(what string, off int) error {
		return fmt.Errorf("manifest delta: %s at offset %d: %w", what, off, ErrCorrupt)
	}
	if len(data) < deltaHeaderLen || string(data[:len(deltaMagic)]) != deltaMagic {
		return 0, 0, bad("bad header", 0)
	}
	if !bytes.Equal(data[len(deltaMagic):deltaHeaderLen], base) {
		return 0, 0, errStaleDelta
	}
	off := deltaHeaderLen
	for off < len(data) {
		rest := data[off:]
		if len(rest) < 4 {
			return n, off, bad("torn record", off)
		}
		ln := binary.LittleEndian.Uint32(rest)
		if ln == 0 || ln > deltaMaxRecord {
			return n, off, bad("bad record length", off)
		}
		if uint64(len(rest)) < 4+uint64(ln)+4 {
			return n, off, bad("torn record", off)
		}
		rec := rest[:4+ln]
		if crc32.Checksum(rec, crcTable) != binary.LittleEndian.Uint32(rest[4+ln:]) {
			return n, off, bad("checksum mismatch", off)
		}
		ops, what := decodeDeltaRecord(rec[4:])
		if what != "" {
			return n, off, bad(what, off)
		}
		for _, op := range ops {
			if op.e == nil {
				delete(ix.entries, op.path)
			} else {
				ix.entries[op.path] = op.e
			}
		}
		n++
		off += 4 + int(ln) + 4
	}
	return n, off, nil
}

// readDelta reads the delta file and its identity (that of the open
// file, so that it names the bytes read). A missing file is no error: nil
// data and a zero identity.
func readDelta(name string) ([]byte, fileID, error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fileID{}, nil
	}
	if err != nil {
		return nil, fileID{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fileID{}, err
	}
	id := fileID{ino: st.Ino, ctime: st.Ctim.Nano(), size: st.Size}
	data := make([]byte, id.size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fileID{}, err
	}
	return data, id, nil
}

// deltaBaseIs reports whether the delta file's header names the index
// whose SHA-256 is sum.
func deltaBaseIs(name string, sum []byte) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [deltaHeaderLen]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return string(h[:len(deltaMagic)]) == deltaMagic && bytes.Equal(h[len(deltaMagic):], sum)
}

// appendIndex saves ix, a file-scoped update of the manifest on disk
// (withUpdates), as one record appended to the delta file. It reports
// false when the whole manifest must be written instead: ix does not
// extend the manifest on disk as cached, the delta is damaged or would
// pass deltaLimit, or the store writes whole manifests only
// (withFullIndexSaves). Under the store lock.
func (s *Store) appendIndex(ix *index) (bool, error) {
	if ix.deltaOf == nil || s.opts.fullIndex {
		return false, nil
	}
	name, dname := s.path("index"), s.path(deltaName)
	s.mu.Lock()
	cur, curID, ds, hash := s.idx, s.idxID, s.idxDelta, s.idxHash
	s.mu.Unlock()
	if cur != ix.deltaOf || curID == (fileID{}) || statID(name) != curID || statID(dname) != ds.id {
		return false, nil
	}
	rec := encodeDeltaRecord(ix, ix.deltaPaths)
	limit := deltaLimit(curID.size)
	var size int64
	if ds.ok {
		size = ds.size + int64(len(rec))
		if size > limit {
			return false, nil
		}
		if err := appendFile(dname, rec); err != nil {
			return false, err
		}
	} else {
		if ds.recs > 0 {
			// Damaged after good records: a new delta would drop them.
			return false, nil
		}
		base, err := hex.DecodeString(hash)
		if err != nil || len(base) != sha256.Size {
			return false, nil
		}
		data := append(deltaHeader(base), rec...)
		if size = int64(len(data)); size > limit {
			return false, nil
		}
		// A new delta, or one replacing a stale or damaged delta: the
		// header never stands without its first record.
		if err := writeFileRename(dname, data, 0o600, false); err != nil {
			return false, err
		}
	}
	s.noteUnsynced(dname)
	id := statID(dname)
	ix.deltaOf, ix.deltaPaths = nil, nil
	s.mu.Lock()
	s.idx, s.idxDelta = ix, deltaState{id: id, recs: ds.recs + 1, size: size, ok: true}
	s.mu.Unlock()
	return true, nil
}

// appendFile appends rec to name in one write (two, with a crash-test
// hook between them, so that a crash can tear it).
func appendFile(name string, rec []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if atomicWriteHook != nil {
		if _, err := f.Write(rec[:len(rec)/2]); err != nil {
			f.Close()
			return err
		}
		atomicWriteHook()
		rec = rec[len(rec)/2:]
	}
	if _, err := f.Write(rec); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// withFullIndexSaves makes every manifest update a whole save, as before
// the delta existed (benchmarks compare the two).
func withFullIndexSaves() Option { return func(o *options) { o.fullIndex = true } }

// updateManifest is withUpdates for the store's current manifest ix,
// using the copy of its map made in the background after the last
// update when it is one (takeUpdSpare). Under the lock.
func (s *Store) updateManifest(ix *index, updates map[string]*ientry) *index {
	return ix.withUpdatesIn(s.takeUpdSpare(ix), updates)
}

// takeUpdSpare returns the background copy of ix's map, if one was made
// of this very map (waiting for it to finish), else nil. Any spare is
// used once.
func (s *Store) takeUpdSpare(ix *index) map[string]*ientry {
	sp := s.updSpare
	s.updSpare = nil
	if !sp.copies(ix) {
		return nil
	}
	return sp.wait()
}

// prepareUpdSpare starts copying the map of ix, the manifest a
// file-scoped update just saved, for the next update (see spareMap).
func (s *Store) prepareUpdSpare(ix *index) { s.updSpare = newSpare(ix) }
