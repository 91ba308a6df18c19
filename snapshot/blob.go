package snapshot

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
)

// smallBlob is the size up to which a file is read into memory, hashed and
// only then written if the store lacks it; larger files are streamed to a
// temporary file while hashing.
const smallBlob = 1 << 20

func (s *Store) blobPath(h string) string {
	return filepath.Join(s.dir, "objects", h[:2], h[2:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// zSuffix marks a blob stored deflate-compressed.
const zSuffix = ".z"

func (s *Store) hasBlob(h string) bool {
	if _, err := os.Lstat(s.blobPath(h)); err == nil {
		return true
	}
	_, err := os.Lstat(s.blobPath(h) + zSuffix)
	return err == nil
}

// compressMin is the size below which compression is not worth it.
const compressMin = 512

// putReader stores the content of r (size bytes expected; -1 if unknown)
// and returns its hash and length. buf is scratch space.
func (s *Store) putReader(r io.Reader, size int64, buf []byte) (string, int64, error) {
	if size >= 0 && size <= smallBlob {
		if int64(cap(buf)) < size+1 {
			buf = make([]byte, size+1)
		}
		b := buf[:size+1]
		n, err := io.ReadFull(r, b)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return "", 0, err
		}
		if n <= int(size) {
			return s.putBytes(b[:n], s.opts.compress)
		}
		// Grew while we read: fall back to streaming what we have plus the rest.
		r = io.MultiReader(bytes.NewReader(b[:n]), r)
	}
	return s.putStream(r)
}

// putBytes stores data, compressed if asked and worth it.
func (s *Store) putBytes(data []byte, compress bool) (string, int64, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if s.hasBlob(h) {
		return h, int64(len(data)), nil
	}
	if b := s.bud.Load(); !b.reserve(int64(len(data))) {
		return h, int64(len(data)), b.exceeded()
	}
	f, err := s.tempBlob()
	if err != nil {
		return "", 0, err
	}
	compress = compress && len(data) >= compressMin
	if compress {
		zw, _ := flate.NewWriter(f, flate.BestSpeed)
		if _, err = zw.Write(data); err == nil {
			err = zw.Close()
		}
	} else {
		_, err = f.Write(data)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", 0, fmt.Errorf("snapshot: blob: %w", err)
	}
	return h, int64(len(data)), s.installBlob(f, h, compress)
}

func (s *Store) tempBlob() (*os.File, error) {
	f, err := os.CreateTemp(s.path("tmp"), "blob-*")
	if err != nil {
		return nil, fmt.Errorf("snapshot: blob: %w", err)
	}
	return f, nil
}

func (s *Store) putStream(r io.Reader) (string, int64, error) {
	f, err := s.tempBlob()
	if err != nil {
		return "", 0, err
	}
	hw := sha256.New()
	var n int64
	bw := &budgetWriter{b: s.bud.Load()}
	if s.opts.compress {
		zw, _ := flate.NewWriter(f, flate.BestSpeed)
		bw.w = zw
		if n, err = io.Copy(io.MultiWriter(bw, hw), r); err == nil {
			err = zw.Close()
		}
	} else {
		bw.w = f
		n, err = io.Copy(io.MultiWriter(bw, hw), r)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		bw.b.release(bw.taken)
		return "", 0, err
	}
	h := hex.EncodeToString(hw.Sum(nil))
	if s.hasBlob(h) || bw.over {
		f.Close()
		os.Remove(f.Name())
		bw.b.release(bw.taken)
		if bw.over && !s.hasBlob(h) {
			// Hashed to the end, but not kept: over the budget.
			return h, n, bw.b.exceeded()
		}
		return h, n, nil
	}
	return h, n, s.installBlob(f, h, s.opts.compress)
}

// budgetWriter writes to w while the budget allows, then only counts:
// the content is still hashed to the end, so that content the store
// already has costs nothing.
type budgetWriter struct {
	w     io.Writer
	b     *budget
	taken int64
	over  bool
}

func (bw *budgetWriter) Write(p []byte) (int, error) {
	if bw.over {
		return len(p), nil
	}
	if !bw.b.reserve(int64(len(p))) {
		bw.over = true
		return len(p), nil
	}
	bw.taken += int64(len(p))
	return bw.w.Write(p)
}

// installBlob closes f and renames it to blob h. Durability comes from
// syncStore, done before the entry that references it is committed.
func (s *Store) installBlob(f *os.File, h string, compressed bool) error {
	name := f.Name()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("snapshot: blob: %w", err)
	}
	dst := s.blobPath(h)
	if compressed {
		dst += zSuffix
	}
	err := os.Rename(name, dst)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			s.noteUnsynced(filepath.Dir(dst)) // its name in objects/
			err = os.Rename(name, dst)
		}
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("snapshot: blob: %w", err)
	}
	s.added.Add(size)
	s.noteUnsynced(dst)
	return nil
}

// linkBlob makes the (immutable) file name blob h by a hard link.
func (s *Store) linkBlob(name, h string) error {
	dst := s.blobPath(h)
	err := os.Link(name, dst)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			s.noteUnsynced(filepath.Dir(dst)) // its name in objects/
			err = os.Link(name, dst)
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err == nil {
		if fi, err := os.Stat(dst); err == nil {
			s.added.Add(fi.Size())
		}
	}
	s.noteUnsynced(dst)
	return nil
}

type zReader struct {
	io.ReadCloser
	f *os.File
}

func (z zReader) Close() error {
	z.ReadCloser.Close()
	return z.f.Close()
}

// openBlob opens blob h for reading (decompressing if stored so).
func (s *Store) openBlob(h string) (io.ReadCloser, error) {
	if !validHash(h) {
		return nil, fmt.Errorf("snapshot: blob %q: %w", h, ErrCorrupt)
	}
	f, err := os.Open(s.blobPath(h))
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err = os.Open(s.blobPath(h) + zSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: blob %s: %w", h[:12], ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return zReader{flate.NewReader(bufio.NewReaderSize(f, 256<<10)), f}, nil
}

// readBlob reads a whole blob, verifying it.
func (s *Store) readBlob(h string) ([]byte, error) {
	f, err := s.openBlob(h)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("snapshot: blob %s: %v: %w", h[:12], err, ErrCorrupt)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("snapshot: blob %s: content does not match its hash: %w", h[:12], ErrCorrupt)
	}
	return data, nil
}

// verifyingWriter hashes what passes through it.
type verifyingWriter struct {
	w io.Writer
	h hash.Hash
}

func (v *verifyingWriter) Write(p []byte) (int, error) {
	v.h.Write(p)
	return v.w.Write(p)
}
