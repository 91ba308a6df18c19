//go:build integration

package integration

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// isStatic reports whether an ELF executable has no program interpreter
// (what agentbox's init mount demands).
func isStatic(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// TestInstall runs the README's two install paths: `make install PREFIX=…`
// and `CGO_ENABLED=0 go install …/cmd/agentbox` (here from the checkout,
// as the module proxy does from a tag); both must give a static binary
// that runs.
func TestInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	prefix := t.TempDir()
	out, err := exec.CommandContext(ctx, "make", "-C", repoRoot, "install", "PREFIX="+prefix).CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	gobin := t.TempDir()
	cmd := exec.CommandContext(ctx, "go", "install", "./cmd/agentbox")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	for _, bin := range []string{filepath.Join(prefix, "bin", "agentbox"), filepath.Join(gobin, "agentbox")} {
		fi, err := os.Stat(bin)
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Fatalf("%s: %v %v", bin, fi, err)
		}
		if !isStatic(t, bin) {
			t.Errorf("%s is dynamically linked", bin)
		}
		v, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(v), "agentbox version ") {
			t.Errorf("%s --version: %v %s", bin, err, v)
		}
	}
}
