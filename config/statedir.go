package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fallbackStateBase is where a per-user state dir goes when the default one
// lies inside the workspace (a workspace that is the home directory): a
// directory that outlives a reboot and is not below any home.
const fallbackStateBase = "/var/tmp"

// fallbackStateDir returns a state dir outside the home directory for the
// current user, creating it 0700. It refuses a path someone else made: it
// must be a real directory (not a symlink) owned by this user and closed to
// others.
func fallbackStateDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(fallbackStateBase, fmt.Sprintf("agentbox-%d", uid))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s exists but is not a directory of yours closed to others", dir)
	}
	return dir, nil
}
