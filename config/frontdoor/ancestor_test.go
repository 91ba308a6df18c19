package frontdoor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAncestorsOthersCanChange: a private directory is only private while
// nobody else can rename it away and put their own in its place. Under a
// parent that another user owns, or that everyone may write without the
// sticky bit, the socket clients connect to or the token file a server
// reads can be swapped (the other user moves the 0700 directory aside and
// creates their own socket at the path). Both doors refuse such a place;
// a sticky world-writable parent (/tmp) is fine.
func TestAncestorsOthersCanChange(t *testing.T) {
	type place struct {
		name  string
		setup func(t *testing.T, shared string)
		ok    bool
	}
	places := []place{
		{"world-writable parent", func(t *testing.T, d string) { chmod(t, d, 0o777) }, false},
		{"world-writable grandparent", func(t *testing.T, d string) { chmod(t, filepath.Dir(d), 0o777) }, false},
		{"sticky world-writable parent", func(t *testing.T, d string) { chmod(t, d, 0o777|os.ModeSticky) }, true},
		{"private parent", func(t *testing.T, d string) { chmod(t, d, 0o755) }, true},
	}
	if os.Geteuid() == 0 {
		places = append(places, place{"parent owned by another user", func(t *testing.T, d string) {
			chmod(t, d, 0o755)
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false})
	}
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) {
			base := shortDir(t)
			shared := filepath.Join(base, "g", "shared")
			if err := os.MkdirAll(shared, 0o755); err != nil {
				t.Fatal(err)
			}
			p.setup(t, shared)
			l, err := ListenUnix(filepath.Join(shared, "run", "s.sock"))
			if err == nil {
				l.Close()
			}
			_, kerr := Ensure(KeyPath(filepath.Join(shared, "state"), "mcp"))
			for what, err := range map[string]error{"ListenUnix": err, "Ensure": kerr} {
				if p.ok && err != nil {
					t.Errorf("%s: %v", what, err)
				}
				if !p.ok && !errors.Is(err, ErrInsecure) {
					t.Errorf("%s: err = %v, want ErrInsecure", what, err)
				}
			}
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
