package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config/atomicfile"
)

// noTemps fails if dir holds a temporary file of an atomic write.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), atomicfile.TempPrefix) {
			t.Errorf("temporary file left behind: %s", de.Name())
		}
	}
}

func TestWriteFileRenameWith(t *testing.T) {
	tests := []struct {
		name    string
		old     string // "" = no file before
		alsoErr error
		want    string // content after; "" = absent
	}{
		{name: "new file", want: "new"},
		{name: "replaces", old: "old", want: "new"},
		{name: "also fails: nothing written", alsoErr: errors.New("disk"), want: ""},
		{name: "also fails: old content kept", old: "old", alsoErr: errors.New("disk"), want: "old"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "entry.json")
			if tc.old != "" {
				if err := os.WriteFile(name, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			called := false
			also := func() error {
				called = true
				// The commit point (the rename) comes after this work.
				b, err := os.ReadFile(name)
				if tc.old == "" && !errors.Is(err, os.ErrNotExist) || tc.old != "" && string(b) != tc.old {
					t.Errorf("the new content was in place before the work that must precede it (%q, %v)", b, err)
				}
				return tc.alsoErr
			}
			err := writeFileRenameWith(name, []byte("new"), 0o600, also)
			if !called {
				t.Error("the concurrent work did not run")
			}
			if (err != nil) != (tc.alsoErr != nil) {
				t.Fatalf("err = %v, want an error: %v", err, tc.alsoErr != nil)
			}
			b, rerr := os.ReadFile(name)
			switch {
			case tc.want == "" && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("file exists (%q), want none", b)
			case tc.want != "" && string(b) != tc.want:
				t.Errorf("content %q (%v), want %q", b, rerr, tc.want)
			}
			noTemps(t, dir)
		})
	}
}

func TestWriteFileNew(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "000001.json")
	if err := writeFileNew(name, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// An existing record is replaced atomically, never written in place.
	if err := writeFileNew(name, []byte(`{"a":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != `{"a":2}` {
		t.Fatalf("content %q, %v", b, err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	noTemps(t, dir)
	if err := writeFileNew(filepath.Join(dir, "missing", "x.json"), nil, 0o600); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// A blob that needs a new objects/xx directory has that directory synced
// too: its name in objects/ must survive a power loss with the blob.
func TestNewBlobDirectorySynced(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	st, err := Open(ctx, t.TempDir(), ws)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := st.putBytes([]byte("content of a new blob"), false)
	if err != nil {
		t.Fatal(err)
	}
	st.syncMu.Lock()
	unsynced := slices.Clone(st.unsynced)
	st.syncMu.Unlock()
	dir := filepath.Dir(st.blobPath(h))
	if !slices.Contains(unsynced, dir) || !slices.Contains(unsynced, st.blobPath(h)) {
		t.Errorf("unsynced = %v, want the blob and its new directory %s", unsynced, dir)
	}
	if err := st.syncStore(); err != nil {
		t.Fatal(err)
	}
}
