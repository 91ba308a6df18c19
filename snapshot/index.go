package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"sync/atomic"
	"time"
)

// ientry is a manifest entry with the stat fields of the stat cache.
type ientry struct {
	Node
	ino   uint64
	ctime int64
	racy  bool // mtime within the second of the scan that recorded it
	// nlink is the link count the scan saw (in memory only: the change
	// capture follows hard links with it; 0 when read from disk).
	nlink uint32
}

// index is a manifest of the whole tree: path → entry. Paths are
// workspace-relative, slash-separated, never "" or ".".
type index struct {
	entries map[string]*ientry
	// from is the index this one was cloned from, directly or through
	// other clones (nil for a scan's result or one read from disk): the
	// change capture trusts a clone of an index it produced (see
	// capture.trusted). One level only, so clones never keep a chain of
	// manifests alive.
	from *index
	// id names the index for diffFrom (0 until asked for, see ident).
	id atomic.Uint64
	// diffFrom and diffPaths: an incremental scan's result records the
	// index it started from (its ident) and every path it looked at (each
	// once): no other path differs between the two (diffIndex uses it).
	diffFrom  uint64
	diffPaths []string
	// deltaOf and deltaPaths: a file-scoped update's result (withUpdates)
	// records the index it updated and the paths it changed, until it is
	// saved (saveIndex appends just those to the delta when deltaOf is the
	// manifest on disk).
	deltaOf    *index
	deltaPaths []string
}

var indexIDs atomic.Uint64

// ident returns the index's id, giving it one the first time.
func (ix *index) ident() uint64 {
	if v := ix.id.Load(); v != 0 {
		return v
	}
	ix.id.CompareAndSwap(0, indexIDs.Add(1))
	return ix.id.Load()
}

func newIndex() *index { return &index{entries: map[string]*ientry{}} }

func (ix *index) paths() []string {
	ps := make([]string, 0, len(ix.entries))
	for p := range ix.entries {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

func (ix *index) clone() *index {
	from := ix.from
	if from == nil {
		from = ix
	}
	return &index{entries: maps.Clone(ix.entries), from: from}
}

// indexMagic heads the manifest encoding. Version 3 added owners and the
// Unstored flag; version 2 manifests (checkpoints taken before) are still
// read, their entries without an owner.
const (
	indexMagic   = "agentbox-manifest-3\n"
	indexMagicV2 = "agentbox-manifest-2\n"
)

var typeCodes = []Type{TypeFile, TypeDir, TypeSymlink, TypeFIFO, TypeSocket, TypeDevice}

func typeCode(t Type) byte {
	for i, x := range typeCodes {
		if x == t {
			return byte(i)
		}
	}
	return 255
}

// encode writes the manifest in a compact binary form with a trailing
// SHA-256 of everything before it.
func (ix *index) encode() []byte {
	var b bytes.Buffer
	b.Grow(len(ix.entries) * 100)
	b.WriteString(indexMagic)
	var tmp [binary.MaxVarintLen64]byte
	uv := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	paths := ix.paths()
	uv(uint64(len(paths)))
	prev := ""
	for _, p := range paths {
		e := ix.entries[p]
		// Sorted paths share prefixes: store the shared length and the rest.
		n := 0
		for n < len(p) && n < len(prev) && p[n] == prev[n] {
			n++
		}
		uv(uint64(n))
		uv(uint64(len(p) - n))
		b.WriteString(p[n:])
		prev = p
		putEntry(&b, e)
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// putEntry appends an entry's fields (everything but its path) in the
// manifest's encoding; the delta's records use it too.
func putEntry(b *bytes.Buffer, e *ientry) {
	var tmp [binary.MaxVarintLen64]byte
	uv := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	sv := func(v int64) { b.Write(tmp[:binary.PutVarint(tmp[:], v)]) }
	b.WriteByte(typeCode(e.Type))
	var flags byte
	if e.racy {
		flags |= 1
	}
	if e.Unreadable {
		flags |= 2
	}
	if e.Hash != "" {
		flags |= 4
	}
	if e.Owner != nil {
		flags |= 8
	}
	if e.Unstored {
		flags |= 16
	}
	b.WriteByte(flags)
	uv(uint64(e.Mode))
	sv(e.Size)
	sv(e.MTime.UnixNano())
	sv(e.ctime)
	uv(e.ino)
	if e.Hash != "" {
		h, _ := hex.DecodeString(e.Hash)
		b.Write(h)
	}
	if e.Type == TypeSymlink {
		uv(uint64(len(e.Link)))
		b.WriteString(e.Link)
	}
	if e.Owner != nil {
		uv(uint64(e.Owner.UID))
		uv(uint64(e.Owner.GID))
	}
}

func decodeIndex(data []byte) (*index, error) {
	bad := func(what string) error { return fmt.Errorf("manifest: %s: %w", what, ErrCorrupt) }
	if len(data) < len(indexMagic)+32 || string(data[:len(indexMagic)]) != indexMagic && string(data[:len(indexMagicV2)]) != indexMagicV2 {
		return nil, bad("bad header")
	}
	body, tail := data[:len(data)-32], data[len(data)-32:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], tail) {
		return nil, bad("checksum mismatch")
	}
	d := &entryReader{r: bytes.NewReader(body[len(indexMagic):])}
	n := d.uv()
	if n > uint64(len(data)) {
		return nil, bad("bad count")
	}
	ix := &index{entries: make(map[string]*ientry, n)}
	prev := ""
	for i := uint64(0); i < n && d.err == nil; i++ {
		shared := d.uv()
		if shared > uint64(len(prev)) {
			return nil, bad("bad path prefix")
		}
		p := prev[:shared] + d.str(d.uv())
		prev = p
		e, what := d.entry()
		if what != "" {
			return nil, bad(what)
		}
		ix.entries[p] = e
	}
	if d.err != nil {
		return nil, bad(d.err.Error())
	}
	return ix, nil
}

// entryReader reads the manifest's encoding; err is the first read
// error (reads after it return zero values).
type entryReader struct {
	r   *bytes.Reader
	err error
}

func (d *entryReader) uv() uint64 {
	v, e := binary.ReadUvarint(d.r)
	if e != nil && d.err == nil {
		d.err = e
	}
	return v
}

func (d *entryReader) sv() int64 {
	v, e := binary.ReadVarint(d.r)
	if e != nil && d.err == nil {
		d.err = e
	}
	return v
}

func (d *entryReader) str(n uint64) string {
	if n > uint64(d.r.Len()) {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
		}
		return ""
	}
	buf := make([]byte, n)
	io.ReadFull(d.r, buf)
	return string(buf)
}

// entry reads what putEntry wrote. A value no encoder writes is named in
// what; a short read is left in d.err.
func (d *entryReader) entry() (e *ientry, what string) {
	tc, _ := d.r.ReadByte()
	flags, _ := d.r.ReadByte()
	if int(tc) >= len(typeCodes) {
		return nil, "bad type"
	}
	e = &ientry{}
	e.Type = typeCodes[tc]
	e.racy = flags&1 != 0
	e.Unreadable = flags&2 != 0
	e.Unstored = flags&16 != 0
	e.Mode = uint32(d.uv())
	e.Size = d.sv()
	e.MTime = time.Unix(0, d.sv()).UTC()
	e.ctime = d.sv()
	e.ino = d.uv()
	if flags&4 != 0 {
		var h [32]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil && d.err == nil {
			d.err = err
		}
		e.Hash = hex.EncodeToString(h[:])
	}
	if e.Type == TypeSymlink {
		e.Link = d.str(d.uv())
	}
	if flags&8 != 0 {
		uid, gid := d.uv(), d.uv()
		if uid > 1<<32-1 || gid > 1<<32-1 {
			return nil, "bad owner"
		}
		e.Owner = ownerOf(uint32(uid), uint32(gid))
	}
	return e, ""
}

// loadIndex returns the manifest of the last scan (an empty one if there
// was none): the index file with the delta's records applied (delta.go).
// It is cached across calls while both files are unchanged.
func (s *Store) loadIndex() (*index, error) {
	name, dname := s.path("index"), s.path(deltaName)
	id, did := statID(name), statID(dname)
	s.mu.Lock()
	if s.idx != nil && id == s.idxID && did == s.idxDelta.id && id != (fileID{}) {
		ix := s.idx
		s.mu.Unlock()
		return ix, nil
	}
	s.mu.Unlock()
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return newIndex(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	ix, err := decodeIndex(data)
	if err != nil {
		// The index is a cache of the last scan: a damaged one costs a
		// full re-hash, nothing else.
		s.opts.log.Warn("snapshot: ignoring damaged manifest", "err", err)
		return newIndex(), nil
	}
	sum := sha256.Sum256(data)
	ddata, did, err := readDelta(dname)
	if err != nil {
		return nil, fmt.Errorf("snapshot: manifest delta: %w", err)
	}
	ds := deltaState{id: did}
	if ddata != nil {
		n, end, err := replayDelta(ix, ddata, sum[:])
		ds.recs, ds.size, ds.ok = n, int64(end), err == nil
		if err != nil && !errors.Is(err, errStaleDelta) {
			// The records before the damage are the manifest some earlier
			// call left; the next update writes the whole manifest.
			s.opts.log.Warn("snapshot: ignoring the damaged end of the manifest delta", "err", err, "records", n)
		}
	}
	s.mu.Lock()
	s.idx, s.idxID, s.idxHash, s.idxDelta = ix, id, hex.EncodeToString(sum[:]), ds
	s.mu.Unlock()
	return ix, nil
}

// hasIndex reports whether a whole-tree scan was ever saved. Until then
// single-path updates are not worth a manifest.
func (s *Store) hasIndex() bool {
	_, err := os.Lstat(s.path("index"))
	return err == nil
}

// saveIndex writes the manifest and caches it: a file-scoped update of
// the manifest on disk (withUpdates) as a record appended to the delta,
// anything else whole. It returns the manifest's blob name, "" after an
// append (see manifestHash).
func (s *Store) saveIndex(ix *index) (string, error) {
	ok, err := s.appendIndex(ix)
	if err != nil {
		// The delta may end with a torn record now: the whole manifest
		// goes to disk instead (loadIndex would stop at that record).
		s.opts.log.Warn("snapshot: appending to the manifest delta; saving it whole", "err", err)
	}
	if ok {
		return "", nil
	}
	enc := ix.encode()
	if err := s.writeIndex(ix, enc); err != nil {
		return "", err
	}
	return s.manifestHash(ix), nil
}

// writeIndex writes enc, the encoding of ix, as the current manifest. It
// is made durable by the next syncStore (every commit does one).
func (s *Store) writeIndex(ix *index, enc []byte) error {
	name, dname := s.path("index"), s.path(deltaName)
	sum := sha256.Sum256(enc)
	if deltaBaseIs(dname, sum[:]) {
		// A delta extending this very content would be replayed over it
		// (see delta.go): it goes before the new index is in place.
		if err := os.Remove(dname); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("snapshot: saving manifest: %w", err)
		}
		s.noteUnsynced(dname)
	}
	if err := writeFileRename(name, enc, 0o600, false); err != nil {
		return fmt.Errorf("snapshot: saving manifest: %w", err)
	}
	s.noteUnsynced(name)
	if ix.deltaOf != nil {
		ix.deltaOf, ix.deltaPaths = nil, nil
	}
	s.mu.Lock()
	// A delta left beside it names the index it extends: not this one.
	s.idx, s.idxID, s.idxHash = ix, statID(name), hex.EncodeToString(sum[:])
	s.idxDelta = deltaState{id: statID(dname)}
	s.mu.Unlock()
	if s.cap != nil {
		s.cap.saved.Store(&savedIndex{ix: ix, hash: hex.EncodeToString(sum[:])})
	}
	return nil
}

// manifestHash is the hash of ix's encoding if ix is the cached manifest
// and was saved whole (no delta records applied to it); else "".
func (s *Store) manifestHash(ix *index) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx == ix && s.idxDelta.recs == 0 {
		return s.idxHash
	}
	return ""
}
