package atomicfile_test

import (
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
