package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// TestPrivateRunDirOthersCanChange: when the state dir's path is too long
// for a socket, the engine's run directory goes to a shared base under a
// name anyone can compute. A directory someone else made there first (or
// one open to others) would hold root's engine socket and pid file where
// they can swap them; the engine must not start there.
func TestPrivateRunDirOthersCanChange(t *testing.T) {
	base := t.TempDir()
	old := shortRunBase
	shortRunBase = func() string { return base }
	defer func() { shortRunBase = old }()
	p := privatePaths(filepath.Join(t.TempDir(), strings.Repeat("s", 120)))
	if filepath.Dir(p.Run) != base {
		t.Fatalf("run dir %s is not under the short base", p.Run)
	}
	// Planted before agentbox runs: open to everyone (and, as root can
	// show, owned by another user).
	if err := os.Mkdir(p.Run, 0o777); err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(p.Run, 0o777))
	if os.Geteuid() == 0 {
		if err := os.Chown(p.Run, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := startPrivate(ctx, "/nonexistent/dockerd", p, time.Second, slog.New(slog.DiscardHandler))
	if !errors.Is(err, frontdoor.ErrInsecure) {
		t.Fatalf("err = %v, want ErrInsecure (the run directory is not private)", err)
	}
	if ents, _ := os.ReadDir(p.Run); len(ents) != 0 {
		t.Errorf("agentbox wrote into the planted directory: %v", ents)
	}
}
