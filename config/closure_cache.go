package config

import (
	"os"
	"path"
	"strings"
	"sync"
)

// ChangeFeed reports the workspace-relative paths ("/"-separated) whose
// directory entry was created, removed or moved in or out since its
// previous call, and ok. ok is false when it cannot vouch for that (no
// watcher, not subscribed before this call, events lost): the caller
// must then look at the whole tree. Every change whose system call
// returned before the call must be in what it returns.
type ChangeFeed func() (paths map[string]bool, ok bool)

// ClosureCache keeps the host-run closure of one workspace and computes
// it again only when what changed could change it. Get is what
// Config.Closure(false) would return at the moment of the call:
//
//   - every observation the last build recorded (trigger files read —
//     their device, inode, size, mtime and ctime —, types and absences
//     looked up, directories listed, symlink targets) is made again, O(the
//     number of triggers), and must come out the same, and so must the
//     owner's git config files outside the workspace it read (stat'ed by
//     path: no feed covers them);
//   - the feed's changed entries since the last Get must not touch what
//     the whole-tree walk acts on (an .envrc, a nested .git, a symlink
//     with a protected name, at that path or beneath a directory that
//     appeared there) nor remove what it acted on;
//   - without a feed, after a lost one, or for a build whose observations
//     cannot vouch for it (one failed other than by absence, a trigger
//     changed within racyWindow of the build, a directory could not be
//     listed, the walk stopped at its limit) it is computed again.
//
// Why a reused Closure never protects less than a new one: a build is a
// deterministic function of its observations (the config is fixed), so
// equal observations give an equal closure. The observations outside the
// walk are made again at every Get, after the feed was drained; the
// walk's listings can only differ at entries the feed reports (the
// kernel queues the event inside the system call that changes an entry,
// and the feed was subscribed before the build began), and a reported
// entry the walk would act on, or did act on, forces a new build. File
// content is vouched for by ctime, which no user can set and which every
// write moves; a file changed again within the same timestamp tick after
// its stat is ruled out by racyWindow. The git-directory test of the
// name rules is made fresh for every Get (GitDirTest), never taken from
// the cache.
//
// Safe for concurrent use; Gets are serialized.
type ClosureCache struct {
	mu     sync.Mutex
	ws     string
	build  func() *Closure
	feed   ChangeFeed
	last   *Closure
	builds int // for tests: how many times it computed
	reuses int
}

// ClosureCache returns a cache of c's full closure (Closure(false)) that
// revalidates through feed (nil: none; every Get computes).
func (c *Config) ClosureCache(feed ChangeFeed) *ClosureCache {
	return &ClosureCache{ws: c.Workspace, build: func() *Closure { return c.Closure(false) }, feed: feed}
}

// Get returns the closure of the workspace now (see ClosureCache).
func (k *ClosureCache) Get() *Closure {
	k.mu.Lock()
	defer k.mu.Unlock()
	// The feed first: what changes from here on is in its next answer.
	var changed map[string]bool
	ok := false
	if k.feed != nil {
		changed, ok = k.feed()
	}
	if ok && k.last != nil && k.last.reusable() && k.valid(changed) {
		k.reuses++
		cp := *k.last
		cp.isGitDir = GitDirTest(k.ws)
		return &cp
	}
	k.builds++
	k.last = k.build()
	return k.last
}

// valid reports whether the last closure still holds given the entries
// changed since it was built.
func (k *ClosureCache) valid(changed map[string]bool) bool {
	root, err := os.OpenRoot(k.ws)
	if err != nil {
		return false
	}
	defer root.Close()
	return ownerStill(k.last.global) && !k.last.walkAffected(root, changed) && still(root, k.last.obs)
}

// reusable reports whether c's recorded observations can vouch for it
// later (see ClosureCache).
func (c *Closure) reusable() bool {
	return !c.racy && !c.blind && c.walk.done && !c.walk.partial
}

// walkAffected reports whether an entry change at one of paths could
// change what c's whole-tree walk found: one the walk acted on is gone or
// beneath a changed path, or the walk would act on the entry now or on
// something beneath it (a directory created or moved in).
func (c *Closure) walkAffected(root *os.Root, paths map[string]bool) bool {
	lb := &closureBuilder{c: &Closure{prot: c.prot, isGitDir: GitDirTest(c.ws)}}
	n := 0
	for p := range paths {
		if walkSkips(p) {
			continue
		}
		for m := range c.walk.marks {
			if m == p || strings.HasPrefix(m, p+"/") {
				return true
			}
		}
		fi, err := root.Lstat(p)
		if isNotExist(err) {
			continue
		}
		if err != nil || walkActs(p, fi.Mode().Type(), lb.linkName) {
			return true
		}
		if base := path.Base(p); fi.IsDir() && base != ".git" && base != "node_modules" {
			found := false
			err := walkTree(root, p, &n, func(q string, d os.DirEntry) {
				found = found || walkActs(q, d.Type(), lb.linkName)
			})
			if found || err != nil {
				return true
			}
		}
	}
	return false
}

// Reuses reports how many Gets returned the kept closure (for tests and
// logs).
func (k *ClosureCache) Reuses() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reuses
}
