package snapshot

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"
)

func TestIndexRoundTrip(t *testing.T) {
	ix := newIndex()
	add := func(p string, e ientry) { ix.entries[p] = &e }
	add("a", ientry{Node: Node{Type: TypeDir, Mode: 0o755, MTime: time.Unix(1, 2).UTC()}, ino: 7, ctime: 9})
	add("a/b.go", ientry{Node: Node{Type: TypeFile, Mode: 0o644, Size: 12, MTime: time.Unix(3, 4).UTC(),
		Hash: "aa00000000000000000000000000000000000000000000000000000000000000"}, racy: true})
	add("a/bad\xff\nname", ientry{Node: Node{Type: TypeSymlink, Link: "../x\xfe", MTime: time.Unix(5, 0).UTC()}})
	add("a/b.gz", ientry{Node: Node{Type: TypeFile, Unreadable: true, Size: 5, MTime: time.Unix(6, 0).UTC()}})
	add("z", ientry{Node: Node{Type: TypeFIFO, Mode: 0o600, MTime: time.Unix(7, 0).UTC()}})
	add("o", ientry{Node: Node{Type: TypeFile, Mode: 0o640, Size: 3, MTime: time.Unix(8, 0).UTC(), Owner: ownerOf(1000, 1001),
		Hash: "bb00000000000000000000000000000000000000000000000000000000000000", Unstored: true}})
	add("r", ientry{Node: Node{Type: TypeDir, Mode: 0o700, MTime: time.Unix(9, 0).UTC(), Owner: ownerOf(0, 0)}})
	enc := ix.encode()
	got, err := decodeIndex(enc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.entries) != len(ix.entries) {
		t.Fatalf("%d entries, want %d", len(got.entries), len(ix.entries))
	}
	for p, e := range ix.entries {
		if !entryEqual(e, got.entries[p]) {
			t.Errorf("%q: %+v, want %+v", p, got.entries[p], e)
		}
	}
	// Every truncation or flipped byte is caught, never a panic.
	for i := 0; i < len(enc); i++ {
		if _, err := decodeIndex(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0x41
		if _, err := decodeIndex(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
}

// A version 2 manifest (checkpoints taken before owners were kept) still
// decodes, its entries without an owner.
func TestIndexV2(t *testing.T) {
	ix := newIndex()
	ix.entries["a"] = &ientry{Node: Node{Type: TypeFile, Mode: 0o644, Size: 1, MTime: time.Unix(3, 0).UTC(),
		Hash: "cc00000000000000000000000000000000000000000000000000000000000000"}}
	enc := ix.encode() // no owner: the v3 encoding of this entry equals v2's
	v2 := append([]byte(indexMagicV2), enc[len(indexMagic):len(enc)-32]...)
	sum := sha256.Sum256(v2)
	v2 = append(v2, sum[:]...)
	got, err := decodeIndex(v2)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.entries["a"]; e == nil || e.Owner != nil || e.Hash != ix.entries["a"].Hash {
		t.Fatalf("v2 entry = %+v", e)
	}
}

func FuzzDecodeIndex(f *testing.F) {
	ix := newIndex()
	ix.entries["a/b"] = &ientry{Node: Node{Type: TypeFile, Hash: "0000000000000000000000000000000000000000000000000000000000000000"}}
	f.Add(ix.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeIndex(data) // must not panic
	})
}
