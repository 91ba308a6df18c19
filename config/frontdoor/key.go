package frontdoor

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/atomicfile"
)

// Errors a caller can test with errors.Is. No error of this package
// carries a token.
var (
	// ErrNoKey: the token file does not exist (Load).
	ErrNoKey = errors.New("no token file")
	// ErrInsecure: a token file, its directory or a socket directory is
	// open to other users or not owned by this uid.
	ErrInsecure = errors.New("not private to its owner")
	// ErrBadToken: the token file does not hold a usable token.
	ErrBadToken = errors.New("not a usable token")
	// ErrWrongToken: a presented token is not the door's token.
	ErrWrongToken = errors.New("wrong token")
)

// TokenBytes is the number of random bytes in a token (256 bits).
const TokenBytes = 32

// minTokenLen is the shortest token a file may hold: a person may write
// their own, but not a guessable one.
const minTokenLen = 32

// maxKeyFile bounds what Load reads.
const maxKeyFile = 4096

// tokenSyntax is RFC 6750's b64token: what may follow "Bearer ".
var tokenSyntax = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)

// WellFormed reports whether tok may follow "Bearer " in a header: RFC
// 6750's b64token (what every token this package makes is). Tokens set by
// hand are checked with it, so that none carries a character that could
// break the header or a client's config, or escape redaction.
func WellFormed(tok string) bool { return tokenSyntax.MatchString(tok) }

// dirName is the directory under the state dir that holds the keys.
const dirName = "frontdoor"

// KeyPath is where the token of the door named door lives:
// <stateDir>/frontdoor/<door>.token ("mcp", "egress", "ui").
func KeyPath(stateDir, door string) string {
	return filepath.Join(stateDir, dirName, door+".token")
}

// NewToken returns a fresh token: TokenBytes from crypto/rand, base64url
// without padding (43 characters). Callers that mint tokens kept only in
// memory (the egress proxy's per-executor tokens) use it too.
func NewToken() (string, error) {
	b := make([]byte, TokenBytes)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		return "", fmt.Errorf("frontdoor: reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Equal reports, in time independent of where they differ and of their
// lengths, whether presented is want. An empty want never matches: a
// door without a token is shut, not open.
func Equal(want, presented string) bool {
	if want == "" {
		return false
	}
	a := sha256.Sum256([]byte(want))
	b := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// A Verifier decides whether a presented bearer token opens a door:
// nil, an error wrapping ErrWrongToken, or another error when it cannot
// decide (then the door stays shut). *Key and Fixed are Verifiers; the
// egress proxy can supply its own (per-executor tokens).
type Verifier interface {
	Verify(presented string) error
}

// Fixed is a token given explicitly (the mcp.bearer_token setting). An
// empty Fixed refuses everything.
type Fixed string

// Verify implements Verifier.
func (f Fixed) Verify(presented string) error {
	if !Equal(string(f), presented) {
		return ErrWrongToken
	}
	return nil
}

// Key is a door's token file. It re-reads the file when the file changes
// (another process rotated it), so Verify and Token always answer for the
// token on disk. Safe for concurrent use.
type Key struct {
	path string

	mu    sync.Mutex
	stamp stamp  // of the file the token was read from
	dir   stamp  // of its directory then (owner, mode, inode)
	token string // "" when err is set
	err   error  // why the file at stamp is unusable
}

// stamp identifies one version of a file: a rotation renames a new inode
// into place; a chmod or chown changes ctime.
type stamp struct {
	dev, ino   uint64
	size       int64
	mtime      unix.Timespec
	ctime      unix.Timespec
	mode, uid  uint32
	nlink      uint64
	statFailed bool
}

func stampOf(st *unix.Stat_t) stamp {
	return stamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim, mode: st.Mode, uid: st.Uid, nlink: uint64(st.Nlink)}
}

// Load opens the token file at path. It fails with ErrNoKey when there is
// none, ErrInsecure when the file or its directory is open to others or
// owned by someone else, ErrBadToken when it holds no usable token.
func Load(path string) (*Key, error) {
	k := &Key{path: path}
	if _, err := k.current(); err != nil {
		return nil, err
	}
	return k, nil
}

// Ensure opens the token file at path, creating it with a new token (mode
// 0600, atomically, its directory 0700) when it does not exist. An
// existing file is never replaced: an insecure one is an error (its token
// may have leaked; Rotate replaces it).
func Ensure(path string) (*Key, error) {
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := writeNew(path); err != nil {
			return nil, err
		}
	}
	return Load(path)
}

// Rotate replaces the token file at path (or creates it) with a new
// token. Every Key on that file, in this process or another, refuses the
// old token from its next check on. A directory of this uid that was
// opened to others is closed again (0700) first: the token that was in
// it is the one being replaced.
func Rotate(path string) (*Key, error) {
	dir := filepath.Dir(path)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Uid == uint32(os.Geteuid()) {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("frontdoor: %w", err)
		}
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := writeNew(path); err != nil {
		return nil, err
	}
	return Load(path)
}

// Path is the token file's path (safe to show: it is not the token).
func (k *Key) Path() string { return k.path }

// Token returns the current token, for writing it where a client reads it.
// Never log it.
func (k *Key) Token() (string, error) { return k.current() }

// Verify implements Verifier against the token currently in the file.
func (k *Key) Verify(presented string) error {
	tok, err := k.current()
	if err != nil {
		return err
	}
	if !Equal(tok, presented) {
		return ErrWrongToken
	}
	return nil
}

// current returns the token in the file, reading it again when lstat
// shows a different file (or version of it) than last time.
func (k *Key) current() (string, error) {
	s, d := lstamp(k.path), lstamp(filepath.Dir(k.path))
	// A directory's times change with every file made in it; its owner,
	// mode and identity are what matter.
	d.size, d.mtime, d.ctime, d.nlink = 0, unix.Timespec{}, unix.Timespec{}, 0
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stamp == s && k.dir == d && (k.token != "" || k.err != nil) && !s.statFailed && !d.statFailed {
		return k.token, k.err
	}
	tok, read, err := readKey(k.path)
	k.token, k.err = tok, err
	k.stamp, k.dir = read, d
	if err != nil {
		k.token = ""
	}
	return k.token, k.err
}

// lstamp is the stamp of what is at path, without following a symlink.
func lstamp(path string) stamp {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return stamp{statFailed: true}
	}
	return stampOf(&st)
}

// readKey reads and checks a token file through one descriptor: what is
// checked (owner, mode, type) is the file whose bytes are read.
func readKey(path string) (string, stamp, error) {
	if err := checkDir(filepath.Dir(path), false); err != nil {
		return "", stamp{statFailed: true}, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return "", stamp{statFailed: true}, fmt.Errorf("frontdoor: %s: %w", path, ErrNoKey)
		case errors.Is(err, unix.ELOOP):
			return "", stamp{statFailed: true}, fmt.Errorf("frontdoor: token file %s is a symlink: %w", path, ErrInsecure)
		}
		return "", stamp{statFailed: true}, fmt.Errorf("frontdoor: opening token file %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", stamp{statFailed: true}, fmt.Errorf("frontdoor: %s: %w", path, err)
	}
	s := stampOf(&st)
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", s, fmt.Errorf("frontdoor: token file %s is not a regular file: %w", path, ErrInsecure)
	}
	if err := private(path, "token file", st.Uid, st.Mode, 0o077); err != nil {
		return "", s, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", s, fmt.Errorf("frontdoor: reading %s: %w", path, err)
	}
	tok := strings.TrimRight(string(b), "\r\n")
	if len(b) > maxKeyFile || len(tok) < minTokenLen || !WellFormed(tok) {
		// Say what is wrong without saying what is there.
		return "", s, fmt.Errorf("frontdoor: token file %s: %w (want one line of at least %d characters from A-Z a-z 0-9 - . _ ~ + /)", path, ErrBadToken, minTokenLen)
	}
	return tok, s, nil
}

// CheckPrivate checks that the file at path (a symlink is followed: the
// target is what is read), which holds a token set by hand (a config
// file with mcp.bearer_token), belongs to this uid and is closed to group
// and others. Otherwise it fails with ErrInsecure: every local user may
// know a token such a file holds.
func CheckPrivate(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("frontdoor: %s: %w", path, err)
	}
	return private(path, "file holding a token", st.Uid, st.Mode, 0o077)
}

// private checks that a file or directory belongs to this uid and has
// none of the bits in forbidden.
func private(path, what string, uid, mode, forbidden uint32) error {
	if me := uint32(os.Geteuid()); uid != me {
		return fmt.Errorf("frontdoor: %s %s is owned by uid %d, not by uid %d (this process): %w", what, path, uid, me, ErrInsecure)
	}
	if mode&forbidden != 0 {
		next := "a token in it may have leaked, so replace it rather than chmod it"
		if mode&unix.S_IFMT == unix.S_IFDIR {
			// What is in it keeps its own mode (a token file is checked
			// on its own): closing the directory is enough.
			next = "close it (chmod 700 " + path + ") if it is yours to use, or choose another place"
		}
		return fmt.Errorf("frontdoor: %s %s has mode %#o, open to group or others: %w; %s", what, path, mode&0o7777, ErrInsecure, next)
	}
	return nil
}

// CheckPrivateDir checks that dir is a real directory (not a symlink) of
// this uid that only it can enter, below directories no other user can
// use to swap it (ErrInsecure; ErrNoKey when it does not exist). For
// other private places of a door, such as the engine's socket directory.
func CheckPrivateDir(dir string) error { return checkDir(dir, false) }

// checkDir checks that dir is a real directory (not a symlink) of this
// uid that only it can enter. With create, a missing dir is made 0700.
func checkDir(dir string, create bool) error { return checkDirMode(dir, create, 0o077) }

// checkDirMode is checkDir with the permission bits that must be clear.
func checkDirMode(dir string, create bool, forbidden uint32) error {
	if err := checkAncestors(filepath.Dir(dir)); err != nil {
		return err
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("frontdoor: %w", err)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			// No directory, so no token file in it (or socket yet).
			return fmt.Errorf("frontdoor: directory %s: %w", dir, ErrNoKey)
		}
		return fmt.Errorf("frontdoor: directory %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("frontdoor: %s is not a directory (a symlink?): %w", dir, ErrInsecure)
	}
	return private(dir, "directory", st.Uid, st.Mode, forbidden)
}

// checkAncestors checks that no other user can rename what lies below
// dir: every existing directory on its path, and on the path it resolves
// to, belongs to this uid or root and, when everyone may write to it, is
// sticky (like /tmp, where only a file's owner may rename it). Otherwise
// another user could move a private directory aside and put their own
// socket or token file at its path. (Group-writable directories are not
// judged: the group is usually the owner's own.)
func checkAncestors(dir string) error {
	walk := func(p string) error {
		for {
			var st unix.Stat_t
			err := unix.Lstat(p, &st)
			switch {
			case err == nil:
				if me := uint32(os.Geteuid()); st.Uid != me && st.Uid != 0 {
					return fmt.Errorf("frontdoor: %s is owned by uid %d, who could replace what lies below it: %w", p, st.Uid, ErrInsecure)
				}
				if st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0 {
					return fmt.Errorf("frontdoor: every user may write to %s (mode %#o, not sticky) and so replace what lies below it: %w", p, st.Mode&0o7777, ErrInsecure)
				}
			case !errors.Is(err, unix.ENOENT):
				return fmt.Errorf("frontdoor: %s: %w", p, err)
			}
			parent := filepath.Dir(p)
			if parent == p {
				return nil
			}
			p = parent
		}
	}
	if err := walk(dir); err != nil {
		return err
	}
	// Where a symlink on the path leads, from the nearest existing
	// directory up.
	for p := dir; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if real == p {
				return nil
			}
			return walk(real)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// lockDir makes sure dir exists and is private, and holds an exclusive
// lock on it so that two processes creating or rotating the same key do
// not hand out different tokens.
func lockDir(dir string) (unlock func(), err error) {
	if err := checkDir(dir, true); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("frontdoor: locking %s: %w", dir, err)
	}
	return func() { _ = unix.Flock(fd, unix.LOCK_UN); unix.Close(fd) }, nil
}

// writeNew writes a new token to path atomically, mode 0600.
func writeNew(path string) error {
	tok, err := NewToken()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("frontdoor: writing token file %s: %w", path, err)
	}
	return nil
}
