package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// BuildCacheDir is where the persistent build cache appears in every
// container (a bind mount of [BuildCache].Dir).
const BuildCacheDir = "/.agentbox/cache"

// buildCacheEnv points the toolchains' own build and download caches at
// [BuildCacheDir]. Go's cache locks and renames its own entries, npm's
// cacache and pip's caches write content-addressed files atomically, so
// concurrent commands may share them.
func buildCacheEnv() []string {
	return []string{
		"GOCACHE=" + BuildCacheDir + "/go-build",
		"XDG_CACHE_HOME=" + BuildCacheDir + "/xdg",
		"PIP_CACHE_DIR=" + BuildCacheDir + "/pip",
		"npm_config_cache=" + BuildCacheDir + "/npm",
		"npm_config_logs_dir=" + BuildCacheDir + "/npm-logs",
	}
}

// BuildCache is a workspace's persistent build cache on the host: a
// directory in the state dir, owned by the workspace owner, written only
// by sandboxed commands, capped in size by evicting the least recently
// used files. Its contents are written by sandboxed commands, so every
// host-side walk and removal goes through os.Root and follows no symlink.
// Safe for concurrent use.
type BuildCache struct {
	Dir      string
	MaxBytes int64 // 0: no cap

	mu      sync.Mutex
	last    time.Time
	running bool
}

// CacheUsage is the size of a build cache.
type CacheUsage struct {
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
}

// Ensure creates the directory (and its parents, 0700) owned by uid:gid.
// An existing one is made theirs again when it is not; a symlink or
// non-directory in its place is an error.
func (c *BuildCache) Ensure(uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(c.Dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(c.Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(c.Dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("build cache %s is not a directory", c.Dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != uid || int(st.Gid) != gid) {
		if err := os.Lchown(c.Dir, uid, gid); err != nil {
			return fmt.Errorf("build cache %s: %w", c.Dir, err)
		}
	}
	return nil
}

type cacheFile struct {
	rel  string
	size int64
	used time.Time
	link bool
}

// scan lists every regular file and symlink below the cache.
func (c *BuildCache) scan(root *os.Root) ([]cacheFile, CacheUsage, error) {
	var files []cacheFile
	var u CacheUsage
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile, or unreadable: skip
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		used := fi.ModTime()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if at := time.Unix(st.Atim.Unix()); at.After(used) {
				used = at
			}
		}
		files = append(files, cacheFile{rel: p, size: fi.Size(), used: used, link: d.Type()&fs.ModeSymlink != 0})
		u.Bytes += fi.Size()
		u.Files++
		return nil
	})
	return files, u, err
}

// openExisting opens the cache directory as a root; nil and no error
// when it does not exist.
func (c *BuildCache) openExisting() (*os.Root, error) {
	root, err := os.OpenRoot(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return root, nil
}

// Usage reports the cache's size (zero when it does not exist).
func (c *BuildCache) Usage() (CacheUsage, error) {
	root, err := c.openExisting()
	if root == nil {
		return CacheUsage{}, err
	}
	defer root.Close()
	_, u, err := c.scan(root)
	return u, err
}

// Trim evicts the least recently used files (by the later of access and
// modification time) until the cache is at most 90% of MaxBytes, and
// returns what it removed. Removing a file a running build reads is safe
// for the caches used here: a missing entry is a cache miss.
func (c *BuildCache) Trim() (removed CacheUsage, err error) {
	if c.MaxBytes <= 0 {
		return removed, nil
	}
	root, err := c.openExisting()
	if root == nil {
		return removed, err
	}
	defer root.Close()
	files, u, err := c.scan(root)
	if err != nil || u.Bytes <= c.MaxBytes {
		return removed, err
	}
	slices.SortFunc(files, func(a, b cacheFile) int { return a.used.Compare(b.used) })
	goal := c.MaxBytes / 10 * 9
	total := u.Bytes
	for _, f := range files {
		if total <= goal {
			break
		}
		if f.link {
			continue // tiny, and CargoHome's links must stay
		}
		if err := root.Remove(f.rel); err != nil {
			continue
		}
		total -= f.size
		removed.Bytes += f.size
		removed.Files++
	}
	return removed, nil
}

// TrimIfDue runs Trim unless one ran within every or is running now
// (ran is false then). Callers run it in the background after commands.
func (c *BuildCache) TrimIfDue(every time.Duration) (removed CacheUsage, ran bool, err error) {
	c.mu.Lock()
	if c.running || (!c.last.IsZero() && time.Since(c.last) < every) {
		c.mu.Unlock()
		return removed, false, nil
	}
	c.running = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running, c.last = false, time.Now()
		c.mu.Unlock()
	}()
	removed, err = c.Trim()
	return removed, true, err
}

// Clear removes everything in the cache, keeping the directory.
func (c *BuildCache) Clear() (CacheUsage, error) {
	root, err := c.openExisting()
	if root == nil {
		return CacheUsage{}, err
	}
	defer root.Close()
	_, u, _ := c.scan(root)
	d, err := root.Open(".")
	if err != nil {
		return CacheUsage{}, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return CacheUsage{}, err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, root.RemoveAll(n))
	}
	return u, errors.Join(errs...)
}

// CargoHomeDir is CARGO_HOME in the container when a cargo cache is
// mounted: a writable directory of the build cache (cargo takes its locks
// there) whose registry and git entries link to the read-only caches.
const CargoHomeDir = BuildCacheDir + "/cargo-home"

// LinkCargoHome makes cargo-home in the cache, owned by uid:gid, with
// registry and git symlinks to the given host directories ("" skips
// one). Links a command replaced are made again.
func (c *BuildCache) LinkCargoHome(uid, gid int, registry, git string) error {
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Mkdir("cargo-home", 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := root.Lchown("cargo-home", uid, gid); err != nil {
		return err
	}
	for name, target := range map[string]string{"registry": registry, "git": git} {
		if target == "" {
			continue
		}
		rel := "cargo-home/" + name
		if cur, err := root.Readlink(rel); err == nil && cur == target {
			continue
		}
		if err := root.RemoveAll(rel); err != nil {
			return err
		}
		if err := root.Symlink(target, rel); err != nil {
			return err
		}
		if err := root.Lchown(rel, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
