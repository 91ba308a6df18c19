package snapshot

import (
	"bytes"
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

func (s *Store) hasBlob(h string) bool {
	_, err := os.Lstat(s.blobPath(h))
	return err == nil
}

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
			return s.putBytes(b[:n])
		}
		// Grew while we read: fall back to streaming what we have plus the rest.
		r = io.MultiReader(bytes.NewReader(b[:n]), r)
	}
	return s.putStream(r)
}

// putBytes stores data.
func (s *Store) putBytes(data []byte) (string, int64, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if s.hasBlob(h) {
		return h, int64(len(data)), nil
	}
	f, err := os.CreateTemp(s.path("tmp"), "blob-*")
	if err != nil {
		return "", 0, fmt.Errorf("snapshot: blob: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", 0, fmt.Errorf("snapshot: blob: %w", err)
	}
	return h, int64(len(data)), s.installBlob(f, h)
}

func (s *Store) putStream(r io.Reader) (string, int64, error) {
	f, err := os.CreateTemp(s.path("tmp"), "blob-*")
	if err != nil {
		return "", 0, fmt.Errorf("snapshot: blob: %w", err)
	}
	hw := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hw), r)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", 0, err
	}
	h := hex.EncodeToString(hw.Sum(nil))
	if s.hasBlob(h) {
		f.Close()
		os.Remove(f.Name())
		return h, n, nil
	}
	return h, n, s.installBlob(f, h)
}

// installBlob closes f and renames it to blob h. Durability comes from the
// syncfs done before the entry that references it is committed.
func (s *Store) installBlob(f *os.File, h string) error {
	s.dirty.Store(true)
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("snapshot: blob: %w", err)
	}
	dst := s.blobPath(h)
	err := os.Rename(name, dst)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
			err = os.Rename(name, dst)
		}
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("snapshot: blob: %w", err)
	}
	return nil
}

// openBlob opens blob h for reading.
func (s *Store) openBlob(h string) (*os.File, error) {
	if !validHash(h) {
		return nil, fmt.Errorf("snapshot: blob %q: %w", h, ErrCorrupt)
	}
	f, err := os.Open(s.blobPath(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: blob %s: %w", h[:12], ErrNotFound)
	}
	return f, err
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
		return nil, err
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
