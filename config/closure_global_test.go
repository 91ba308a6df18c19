package config

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestGlobalHooksPathsNeverHangs: the owner's git config files are read
// on every closure build; when the workspace is the home directory the
// agent can put a FIFO or a link to /dev/zero at ~/.gitconfig. Neither
// may hang the build or read without end; a real config is still read.
func TestGlobalHooksPathsNeverHangs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(real, []byte("[core]\n\thooksPath = /owner/hooks\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- globalHooksPaths([]string{fifo, zero, real}) }()
	select {
	case got := <-done:
		if !slices.Equal(got, []string{"/owner/hooks"}) {
			t.Errorf("hooks paths %q, want the real config's", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading the owner's git config files hangs on a FIFO or /dev/zero")
	}
}
