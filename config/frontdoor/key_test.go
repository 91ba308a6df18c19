package frontdoor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func statMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnsureCreatesAPrivateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	path := KeyPath(state, "mcp")
	if want := filepath.Join(state, "frontdoor", "mcp.token"); path != want {
		t.Fatalf("KeyPath = %s, want %s", path, want)
	}
	k, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := statMode(t, path); m != 0o600 {
		t.Errorf("token file mode %#o, want 0600", m)
	}
	if m := statMode(t, filepath.Dir(path)); m != 0o700 {
		t.Errorf("key directory mode %#o, want 0700", m)
	}
	tok, err := k.Token()
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 43 || !tokenSyntax.MatchString(tok) {
		t.Errorf("token has %d characters (want 43 base64url: 256 bits)", len(tok))
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A second Ensure keeps the token; another key gets another token.
	k2, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok2, _ := k2.Token(); tok2 != tok {
		t.Error("Ensure replaced an existing token")
	}
	other, err := Ensure(KeyPath(state, "ui"))
	if err != nil {
		t.Fatal(err)
	}
	if tok3, _ := other.Token(); tok3 == tok {
		t.Error("two doors got the same token")
	}
}

func TestLoadWithoutDirectory(t *testing.T) {
	if _, err := Load(KeyPath(filepath.Join(t.TempDir(), "state"), "mcp")); !errors.Is(err, ErrNoKey) {
		t.Errorf("Load in a state dir that does not exist = %v, want ErrNoKey", err)
	}
}

func TestNewTokenIsRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 64 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if seen[tok] {
			t.Fatal("NewToken repeated a token")
		}
		seen[tok] = true
	}
}

func TestLoadRefuses(t *testing.T) {
	const secret = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		want  error
	}{
		{"missing", func(t *testing.T, dir, path string) {}, ErrNoKey},
		{"group readable", func(t *testing.T, dir, path string) { write(t, path, secret, 0o640) }, ErrInsecure},
		{"world readable", func(t *testing.T, dir, path string) { write(t, path, secret, 0o604) }, ErrInsecure},
		{"group writable", func(t *testing.T, dir, path string) { write(t, path, secret, 0o620) }, ErrInsecure},
		{"directory open to others", func(t *testing.T, dir, path string) {
			write(t, path, secret, 0o600)
			must(t, os.Chmod(dir, 0o755))
		}, ErrInsecure},
		{"symlink", func(t *testing.T, dir, path string) {
			real := filepath.Join(dir, "real")
			write(t, real, secret, 0o600)
			must(t, os.Symlink(real, path))
		}, ErrInsecure},
		{"fifo", func(t *testing.T, dir, path string) {
			if err := mkfifo(path); err != nil {
				t.Fatal(err)
			}
		}, ErrInsecure},
		{"too short", func(t *testing.T, dir, path string) { write(t, path, "short-secret-value", 0o600) }, ErrBadToken},
		{"two lines", func(t *testing.T, dir, path string) { write(t, path, secret+"\n"+secret, 0o600) }, ErrBadToken},
		{"space inside", func(t *testing.T, dir, path string) { write(t, path, secret+" "+secret, 0o600) }, ErrBadToken},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			setup func(t *testing.T, dir, path string)
			want  error
		}{"owned by another user", func(t *testing.T, dir, path string) {
			write(t, path, secret, 0o600)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, ErrInsecure})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "frontdoor")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "mcp.token")
			tc.setup(t, dir, path)
			k, err := Load(path)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, %v; want %v", k, err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "short-secret") {
				t.Errorf("the error quotes the file's content: %v", err)
			}
			if tc.want == ErrInsecure {
				// Ensure never overwrites what it refuses to trust.
				if _, err := Ensure(path); !errors.Is(err, ErrInsecure) {
					t.Errorf("Ensure = %v, want ErrInsecure", err)
				}
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestRotate(t *testing.T) {
	path := KeyPath(t.TempDir(), "mcp")
	k, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := k.Token()
	if err := k.Verify(old); err != nil {
		t.Fatalf("the current token is refused: %v", err)
	}
	// Rotation through another Key, as `agentbox mcp token rotate` in
	// another process does.
	r, err := Rotate(path)
	if err != nil {
		t.Fatal(err)
	}
	neu, _ := r.Token()
	if neu == old {
		t.Fatal("Rotate kept the token")
	}
	if err := k.Verify(old); !errors.Is(err, ErrWrongToken) {
		t.Errorf("after rotation the old token gives %v, want ErrWrongToken", err)
	}
	if err := k.Verify(neu); err != nil {
		t.Errorf("after rotation the new token gives %v", err)
	}
	if m := statMode(t, path); m != 0o600 {
		t.Errorf("rotated file mode %#o", m)
	}
	// Rotating replaces a file that may have leaked.
	must(t, os.Chmod(path, 0o644))
	if err := k.Verify(neu); !errors.Is(err, ErrInsecure) {
		t.Errorf("a token file turned world-readable still verifies: %v", err)
	}
	if _, err := Rotate(path); err != nil {
		t.Fatal(err)
	}
	if err := k.Verify(neu); !errors.Is(err, ErrWrongToken) {
		t.Errorf("after the second rotation: %v", err)
	}
	// A directory opened to others: Ensure refuses, Rotate closes it and
	// replaces the token that was in it.
	third, _ := k.Token()
	must(t, os.Chmod(filepath.Dir(path), 0o755))
	if err := k.Verify(third); !errors.Is(err, ErrInsecure) {
		t.Errorf("a key whose directory was opened to others still verifies: %v", err)
	}
	if _, err := Ensure(path); !errors.Is(err, ErrInsecure) {
		t.Errorf("Ensure in a 0755 directory: %v", err)
	}
	if _, err := Rotate(path); err != nil {
		t.Fatal(err)
	}
	if m := statMode(t, filepath.Dir(path)); m != 0o700 {
		t.Errorf("directory mode after rotation %#o", m)
	}
	if err := k.Verify(third); !errors.Is(err, ErrWrongToken) {
		t.Errorf("the token from the opened directory still verifies: %v", err)
	}
}

func TestEqual(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{tok, tok, true},
		{tok, tok[:31], false},
		{tok, tok + "0", false},
		{tok, strings.ToUpper(tok), false},
		{tok, "", false},
		{"", "", false}, // a door without a token is shut
		{"", "x", false},
	} {
		if got := Equal(tc.want, tc.got); got != tc.ok {
			t.Errorf("Equal(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
		err := Fixed(tc.want).Verify(tc.got)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrWrongToken)) {
			t.Errorf("Fixed(%q).Verify(%q) = %v", tc.want, tc.got, err)
		}
	}
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
