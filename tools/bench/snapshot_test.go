package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPlainCopy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for rel, data := range map[string]string{"a.txt": "a\n", "d/b.txt": "bb\n", "d/e/c.txt": ""} {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../a.txt", filepath.Join(src, "d", "link")); err != nil {
		t.Fatal(err)
	}
	if err := plainCopy(src, dst); err != nil {
		t.Fatal(err)
	}
	want, err := snapMeasureTree(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snapMeasureTree(dst)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("copy is %+v, source %+v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "d", "b.txt")); err != nil || string(b) != "bb\n" {
		t.Fatalf("d/b.txt = %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "d", "link")); err != nil || l != "../a.txt" {
		t.Fatalf("d/link -> %q, %v", l, err)
	}
	if err := plainCopy(src, dst); err == nil {
		t.Fatal("a second copy over the first succeeded: files must be created, never overwritten")
	}
}
