package bench

import (
	"io/fs"
	"os"
	"path/filepath"
)

// OwnerUID owns benchmark workspaces when agentbox runs as root: commands
// never run as uid 0 (root-owned workspaces are refused unless
// sandbox.allow_root_workspace), and the peers run as this user too.
const OwnerUID = 65532

// asRoot reports whether the bench runs as root, so that its workspaces
// are given to OwnerUID.
func asRoot() bool { return os.Geteuid() == 0 }

// giveToOwner gives path to OwnerUID when agentbox runs as root.
func giveToOwner(path string) error {
	if !asRoot() {
		return nil
	}
	return os.Lchown(path, OwnerUID, OwnerUID)
}

// giveTreeToOwner gives every file under dir to OwnerUID when agentbox
// runs as root.
func giveTreeToOwner(dir string) error {
	if !asRoot() {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, OwnerUID, OwnerUID)
	})
}

// tempDir makes a temporary directory (prefix as for os.MkdirTemp) and
// returns its path with symlinks resolved (as agentbox resolves a
// workspace) and a function that removes it.
func tempDir(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	remove := func() { os.RemoveAll(dir) }
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		remove()
		return "", nil, err
	}
	return real, remove, nil
}
