package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config/atomicfile"
)

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), atomicfile.TempPrefix) {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.json")
	for i, tc := range []struct {
		data string
		perm os.FileMode
	}{{"one", 0o600}, {"two, longer", 0o644}, {"", 0o555}} {
		if err := atomicfile.WriteFile(name, []byte(tc.data), tc.perm); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		b, err := os.ReadFile(name)
		if err != nil || string(b) != tc.data {
			t.Fatalf("write %d: read %q, %v; want %q", i, b, err, tc.data)
		}
		if fi, _ := os.Stat(name); fi.Mode().Perm() != tc.perm {
			t.Fatalf("write %d: mode %v, want %v", i, fi.Mode().Perm(), tc.perm)
		}
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("temporary files left: %v", l)
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	if err := atomicfile.WriteFile(filepath.Join(t.TempDir(), "no", "f"), nil, 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestFileDiscardedUnlessCommitted(t *testing.T) {
	dir := t.TempDir()
	f, err := atomicfile.Create(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, dir); len(l) != 1 || !strings.HasPrefix(l[0], atomicfile.TempPrefix+"x-") {
		t.Fatalf("temporary file %v, want one named %sx-*", l, atomicfile.TempPrefix)
	}
	f.Close()
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("Close left %v", l)
	}
	if err := f.Commit(filepath.Join(dir, "x"), 0o600); err == nil {
		t.Fatal("commit after close succeeded")
	}
}

func TestCommitElsewhereRefused(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	f, err := atomicfile.Create(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Commit(filepath.Join(other, "x"), 0o600); err == nil {
		t.Fatal("commit into another directory succeeded (a rename there is not atomic across file systems)")
	}
}

func TestCommitNoSync(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "cache")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := atomicfile.Create(dir, "cache")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("new"))
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Fatalf("destination changed before commit: %q", b)
	}
	if err := f.CommitNoSync(name, 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Fatalf("after commit: %q", b)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

func TestCommitWith(t *testing.T) {
	disk := errors.New("disk")
	tests := []struct {
		name    string
		old     string // "" = no file before
		alsoErr error
		noAlso  bool   // also is nil
		want    string // content after; "" = absent
	}{
		{name: "new file", want: "new"},
		{name: "replaces", old: "old", want: "new"},
		{name: "no work", noAlso: true, want: "new"},
		{name: "work fails: nothing written", alsoErr: disk},
		{name: "work fails: old content kept", old: "old", alsoErr: disk, want: "old"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "entry.json")
			if tc.old != "" {
				if err := os.WriteFile(name, []byte(tc.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			called := false
			also := func() error {
				called = true
				// The rename, which makes the new content visible, comes
				// after this work.
				b, err := os.ReadFile(name)
				if tc.old == "" && !errors.Is(err, os.ErrNotExist) || tc.old != "" && string(b) != tc.old {
					t.Errorf("the new content was in place before the work that must precede it (%q, %v)", b, err)
				}
				return tc.alsoErr
			}
			if tc.noAlso {
				also = nil
			}
			f, err := atomicfile.Create(dir, "entry.json")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("new")); err != nil {
				t.Fatal(err)
			}
			err = f.CommitWith(name, 0o640, also)
			f.Close()
			if !tc.noAlso && !called {
				t.Error("the concurrent work did not run")
			}
			if !errors.Is(err, tc.alsoErr) || (err != nil) != (tc.alsoErr != nil) {
				t.Fatalf("err = %v, want %v", err, tc.alsoErr)
			}
			b, rerr := os.ReadFile(name)
			switch {
			case tc.want == "" && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("file exists (%q), want none", b)
			case tc.want != "" && string(b) != tc.want:
				t.Errorf("content %q (%v), want %q", b, rerr, tc.want)
			}
			if tc.want == "new" {
				if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640", fi.Mode().Perm())
				}
			}
			if l := leftovers(t, dir); len(l) != 0 {
				t.Errorf("temporary files left: %v", l)
			}
		})
	}
}
