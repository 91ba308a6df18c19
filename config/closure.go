package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The host-run closure.
//
// A protected name (DefaultProtectedPaths) is a trigger: a host program
// runs or loads it without the person choosing to run project code. What
// the trigger itself runs or loads is protected like it. Which files those
// are depends on what the workspace holds now — the hooks core.hooksPath
// points at, the scripts a hook or a lefthook/pre-commit config names, the
// files an .envrc sources, the keys of package.json a hook's `npm test`
// reads, the target of a protected name that is a symlink — so a Closure
// is computed from the workspace at the moment of use, read through an
// os.Root (never following a symlink out of the workspace).
//
// A trigger file that cannot be read or parsed makes the closure fail
// closed: it protects the conservative set for that trigger (see
// Closure.Notes).

// Closure is the protection of one workspace at one moment: the name rules
// of a Protection plus the host-run closure computed from the files
// present. Build one per decision (Protection.Closure); it is read-only
// after that and safe for concurrent use.
type Closure struct {
	prot     Protection
	isGitDir func(string) bool
	// paths maps a workspace-relative path to why it is protected; it
	// covers everything beneath it.
	paths map[string]string
	// present lists the paths of paths that existed when computed.
	present map[string]bool
	// hooks says why package.json's hook-relevant keys are judged (a hook
	// runner is present); empty: they are not.
	hooks string
	notes []string
	// targets maps a symlink with a protected name to where it resolves.
	targets map[string]string

	// What it was computed from (closure_deps.go): the recorded
	// observations, the walk's findings, and whether they can vouch for
	// it later (racy: a file read changed too recently; blind: an
	// observation failed in a way that may change without a trace).
	obs         []observation
	walk        walkState
	racy, blind bool
	ws          string
	// global are the owner's git config files outside the workspace
	// that were read (ClosureOptions.GlobalGitConfig), as stat'ed then.
	global []ownerObservation
	// shadowDirs are the targets of symlinked PATH directories of
	// installed dependencies (node_modules/.bin -> x): judged like them.
	shadowDirs map[string]bool
	// commands reports whether a name is a program the host runs by
	// name (hostCommand when nil).
	commands func(name string) bool
}

// ClosureOptions select what Protection.Closure computes.
type ClosureOptions struct {
	// Workspace is the workspace's absolute path (absolute paths in
	// trigger files are mapped through it).
	Workspace string
	// IsGitDir is passed to Protection.Match; may be nil.
	IsGitDir func(dir string) bool
	// GlobalGitConfig are the owner's git config files outside the
	// workspace (system, global, XDG) whose core.hooksPath applies to
	// every repository; Config.Closure fills them in.
	GlobalGitConfig []string
	// Shallow skips the walk of the whole tree (symlinked protected names
	// and .envrc files below the root): for callers that run at every
	// container hand-over and leave deeper paths to the changeset check.
	Shallow bool
}

// maxTriggerBytes bounds what is read of one trigger file; a larger one
// fails closed.
const maxTriggerBytes = 4 << 20

// maxWalk bounds the entries the tree walk visits; past it the closure
// notes that it stopped (what it found so far is kept).
const maxWalk = 2_000_000

// Closure computes the host-run closure of the workspace root opens. It
// never fails: what it cannot read it protects conservatively and notes.
func (p Protection) Closure(root *os.Root, opts ClosureOptions) *Closure {
	c := &Closure{prot: p, isGitDir: opts.IsGitDir, paths: map[string]string{}, present: map[string]bool{}, targets: map[string]string{}, ws: opts.Workspace}
	if root == nil {
		c.blind = true
		return c
	}
	b := closureBuilder{c: c, root: &obsRoot{r: root, start: time.Now()}, ws: opts.Workspace}
	// Stat'ed before they are read: a change after that moves what
	// ClosureCache compares (globalStill).
	c.global = b.root.observeOwner(opts.GlobalGitConfig)
	b.global = globalHooksPaths(opts.GlobalGitConfig)
	if opts.IsGitDir != nil {
		// The build's own git-directory test records what it looked at;
		// the answer is the caller's test's.
		c.isGitDir = b.gitDirObserved(opts.IsGitDir)
	}
	b.git()
	b.npmHooks()
	b.hookConfigs()
	b.direnvAt(".envrc")
	if !opts.Shallow {
		b.walk()
	} else {
		b.rootLinks()
	}
	b.resolveLinks()
	b.resolveShadowLinks()
	c.obs, c.racy, c.blind = b.root.obs, b.root.racy, b.root.blind
	c.isGitDir = opts.IsGitDir
	return c
}

// gitDirObserved wraps the git-directory test real so that the entries it
// looks for (see GitDirTest) are recorded as observations of the build.
func (b *closureBuilder) gitDirObserved(real func(string) bool) func(string) bool {
	seen := map[string]bool{}
	return func(dir string) bool {
		if !seen[dir] {
			seen[dir] = true
			for _, name := range gitDirNames {
				b.root.Lstat(dir + "/" + name)
			}
		}
		return real(dir)
	}
}

// Match reports whether the workspace-relative path rel is protected — by
// the name rules (Protection.Match) or by the closure — and why.
func (c *Closure) Match(rel string) (string, bool) {
	if why, ok := c.prot.Match(rel, c.isGitDir); ok {
		return why, true
	}
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	// rel and each directory above it, deepest first: a lookup per
	// component, not a scan of the closure per changed path.
	for p := rel; p != "" && p != "." && p != "/"; p = path.Dir(p) {
		if why, ok := c.paths[p]; ok {
			return fmt.Sprintf("%s is protected: %s", rel, why), true
		}
	}
	return c.shadow(rel)
}

// Judge returns the content judge of rel, or nil when rel is not judged by
// content: a package.json while a hook runner is present
// (judgePackageJSON), the state files of a half-done rebase or
// cherry-pick (judgeGitState). The judge takes the content before and
// after (nil: absent) and reports whether the change is to a protected
// part, and why.
func (c *Closure) Judge(rel string) func(old, new []byte) (string, bool) {
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if isGitState(rel) {
		return func(old, new []byte) (string, bool) { return judgeGitState(rel, new) }
	}
	if path.Base(rel) != "package.json" {
		return nil
	}
	hooks := c.hooks
	return func(old, new []byte) (string, bool) {
		why, ok := judgePackageJSON(old, new, hooks != "")
		if ok && hooks != "" {
			why += " (" + hooks + ")"
		}
		return rel + ": " + why, ok
	}
}

// Paths lists the closure's paths that existed when it was computed
// (files and directories, symlink targets resolved), sorted: what a
// sandbox can mount read-only.
func (c *Closure) Paths() []string {
	out := make([]string, 0, len(c.present))
	for p := range c.present {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// LinkTarget reports where rel, a symlink with a protected name (or a
// closure path that is a symlink), resolves inside the workspace; the
// target is protected like the name.
func (c *Closure) LinkTarget(rel string) (string, bool) {
	t, ok := c.targets[rel]
	return t, ok
}

// Notes are the closure's fail-closed decisions (a trigger file it could
// not read or parse, and what it protected instead), for logs.
func (c *Closure) Notes() []string { return append([]string(nil), c.notes...) }

// HookRunner says why package.json's hook-relevant keys are judged, or ""
// when no hook runner is present.
func (c *Closure) HookRunner() string { return c.hooks }

// closureBuilder computes one Closure.
type closureBuilder struct {
	c    *Closure
	root *obsRoot
	ws   string
	// links are the symlinks with a protected name the walk found.
	links []string
	// prefixes are the directory names protected patterns reach into.
	prefixes map[string]bool
	// global are the core.hooksPath values of the owner's git config
	// outside the workspace.
	global []string
	// shadowLinks are the symlinks the walk found on the way to a PATH
	// directory of installed dependencies (see isShadowLink).
	shadowLinks []string
}

// add protects rel (workspace-relative, clean, local) and what lies
// beneath it.
func (b *closureBuilder) add(rel, why string) {
	rel = strings.TrimPrefix(path.Clean("/"+rel), "/")
	if rel == "" || rel == "." {
		return
	}
	if _, ok := b.c.paths[rel]; !ok {
		b.c.paths[rel] = why
	}
	if _, err := b.root.Lstat(rel); err == nil {
		b.c.present[rel] = true
	}
}

// failClosed records a fail-closed decision.
func (b *closureBuilder) failClosed(format string, args ...any) {
	b.c.notes = append(b.c.notes, fmt.Sprintf(format, args...))
}

// read reads a trigger file (through symlinks that stay inside the
// workspace). It returns os.ErrNotExist when absent.
func (b *closureBuilder) read(rel string) ([]byte, error) {
	// Non-blocking: a FIFO planted at a trigger's name must not hang
	// the decision (it is then refused as not a regular file).
	f, st, err := b.root.open(rel, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTriggerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTriggerBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, maxTriggerBytes)
	}
	return data, nil
}

// exists reports whether rel exists (not following a final symlink).
func (b *closureBuilder) exists(rel string) bool {
	_, err := b.root.Lstat(rel)
	return err == nil
}

// local maps a path named in a trigger file in directory dir (both
// workspace-relative) to a workspace-relative path; false when it lies
// outside the workspace or cannot be known (~, empty).
func (b *closureBuilder) local(dir, name string) (string, bool) {
	if name == "" || strings.HasPrefix(name, "~") {
		return "", false
	}
	if filepath.IsAbs(name) {
		if b.ws == "" {
			return "", false
		}
		rel, err := filepath.Rel(b.ws, name)
		if err != nil || !filepath.IsLocal(rel) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	p := path.Join(dir, name)
	if p == "." {
		return "", false
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", false
	}
	return p, true
}

// rootLinks records the protected names at the workspace root that are
// symlinks (the shallow form of walk).
func (b *closureBuilder) rootLinks() {
	ents, err := b.readDir(".")
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			b.link(e.Name())
		}
	}
}

// walk visits the whole tree once (names and types only, symlinks not
// followed, .git and node_modules directories not entered): every symlink with a protected
// name is recorded for resolveLinks and every .envrc is read. Its
// listings are not recorded as observations (ClosureCache checks them
// with an entry-change feed); the entries it acts on are (walkState).
func (b *closureBuilder) walk() {
	w := &b.c.walk
	w.done, w.marks = true, map[string]bool{}
	n := 0
	err := walkTree(b.root.r, ".", &n, func(p string, d fs.DirEntry) {
		if !walkActs(p, d.Type(), b.linkName) {
			return
		}
		w.marks[p] = true
		if d.Type()&fs.ModeSymlink != 0 {
			b.link(p)
		}
		if d.Name() == ".envrc" {
			b.direnvAt(p)
		}
		if d.Name() == ".git" {
			b.gitAt(path.Dir(p)) // a nested repository: its hooks run too
		}
	})
	if err != nil {
		w.partial = true
	}
	if errors.Is(err, errWalkLimit) {
		b.failClosed("the workspace has more than %d entries: symlinked protected names and .envrc files past that were not looked at", maxWalk)
	}
}

// walkTree calls act for every entry beneath dir (names and types only,
// symlinks not followed, .git and node_modules directories not entered:
// .git has its own rules; node_modules holds installed packages, the
// agent's work product like the source (see the docs), and no host
// program opens a project or enters a directory there). n counts the
// entries against maxWalk. A directory that cannot be listed is skipped
// and reported (errWalkBlind) after the rest is visited.
func walkTree(root *os.Root, dir string, n *int, act func(p string, d fs.DirEntry)) error {
	var blind error
	var visit func(dir string) error
	visit = func(dir string) error {
		ents, err := listDir(root, dir)
		if err != nil {
			blind = errWalkBlind // unreadable directory: nothing of it is known
			return nil
		}
		for _, d := range ents {
			if *n++; *n > maxWalk {
				return errWalkLimit
			}
			p := path.Join(dir, d.Name())
			act(p, d)
			if d.IsDir() && d.Name() != ".git" && d.Name() != "node_modules" {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return err
	}
	return blind
}

var errWalkBlind = errors.New("a directory could not be listed")

var errWalkLimit = errors.New("walk limit")

// readDir lists a directory beneath the root, opened non-blocking as a
// directory (a FIFO swapped in never hangs the walk).
func (b *closureBuilder) readDir(rel string) ([]fs.DirEntry, error) {
	f, _, err := b.root.open(rel, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// listDir lists a directory beneath root like closureBuilder.readDir,
// without recording it.
func listDir(root *os.Root, rel string) ([]fs.DirEntry, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// link records the symlink rel when its name is protected or is a
// directory a protected pattern reaches into (.cargo of .cargo/config.toml).
func (b *closureBuilder) link(rel string) {
	if b.linkName(rel) {
		b.links = append(b.links, rel)
	}
	if isShadowLink(rel) {
		b.shadowLinks = append(b.shadowLinks, rel)
	}
}

// linkName reports whether a symlink at rel is one resolveLinks follows:
// its name is protected or is a directory a protected pattern reaches
// into.
func (b *closureBuilder) linkName(rel string) bool {
	if b.prefixes == nil {
		b.prefixes = map[string]bool{}
		for _, pat := range b.c.prot.patterns {
			comps := strings.Split(strings.Trim(pat, "/"), "/")
			for _, c := range comps[:len(comps)-1] {
				b.prefixes[c] = true
			}
		}
	}
	_, ok := b.c.prot.Match(rel, b.c.isGitDir)
	return ok || b.prefixes[path.Base(rel)]
}

// resolveLinks protects the target of every symlink with a protected name
// and of every closure path that is a symlink: host programs follow the
// link, so the protection judges what the name resolves to.
func (b *closureBuilder) resolveLinks() {
	links := append([]string(nil), b.links...)
	for p := range b.c.paths {
		links = append(links, p)
	}
	sort.Strings(links)
	for _, l := range links {
		fi, err := b.root.Lstat(l)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, via, ok := b.resolve(l)
		if !ok || target == l {
			continue
		}
		why := fmt.Sprintf("%s is a symlink to it, and host programs follow the link", l)
		for _, v := range via[1:] {
			b.add(v, why) // a link on the way redirects the name too
		}
		if _, ok := b.c.prot.Match(l, b.c.isGitDir); ok || b.c.paths[l] != "" {
			b.add(target, why)
			b.c.targets[l] = target
		}
		// A link to a directory whose protected part is deeper
		// (.cargo -> x protects x/config.toml).
		for _, rest := range b.c.prot.below(l) {
			b.add(path.Join(target, rest), fmt.Sprintf("%s is a symlink to %s, and host programs read %s/%s", l, target, l, rest))
		}
	}
}

// below lists the paths beneath dir that a pattern with a slash protects
// (the rest after a component that matches dir's last component).
func (p Protection) below(dir string) []string {
	var out []string
	for _, pat := range p.patterns {
		comps := strings.Split(strings.Trim(pat, "/"), "/")
		for i := 1; i < len(comps); i++ {
			rest := strings.Join(comps[i:], "/")
			if strings.ContainsAny(rest, "*?[") {
				continue
			}
			if _, ok := p.Match(dir+"/"+rest, nil); ok && !slices.Contains(out, rest) {
				if _, whole := p.Match(dir, nil); !whole {
					out = append(out, rest)
				}
			}
		}
	}
	return out
}

// resolve follows symlinks on every component of rel inside the
// workspace; via lists the links it went through; false when a link
// leads out of it or loops.
func (b *closureBuilder) resolve(rel string) (target string, via []string, ok bool) {
	parts := strings.Split(rel, "/")
	cur := ""
	for len(parts) > 0 {
		next := path.Join(cur, parts[0])
		parts = parts[1:]
		fi, err := b.root.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if via = append(via, next); len(via) > 40 {
			return "", nil, false
		}
		t, err := b.root.Readlink(next)
		if err != nil {
			return "", nil, false
		}
		tr, ok := b.local(path.Dir(next), t)
		if !ok {
			return "", nil, false
		}
		parts = append(strings.Split(tr, "/"), parts...)
		cur = ""
	}
	return cur, via, cur != ""
}

// Closure computes the host-run closure of c's workspace now (see
// Protection.Closure); shallow skips the walk of the whole tree. The
// git-directory test of the name rules looks beneath the workspace. A
// workspace that cannot be opened yields the name rules alone.
func (c *Config) Closure(shallow bool) *Closure {
	prot := c.Sandbox.Protection()
	root, err := os.OpenRoot(c.Workspace)
	if err != nil {
		return prot.Closure(nil, ClosureOptions{Workspace: c.Workspace})
	}
	defer root.Close()
	return prot.Closure(root, ClosureOptions{Workspace: c.Workspace, IsGitDir: GitDirTest(c.Workspace), Shallow: shallow,
		GlobalGitConfig: ownerGitConfigs()})
}

// gitDirNames are the entries that make a directory git-like (GitDirTest).
var gitDirNames = []string{"HEAD", "objects", "refs"}

// GitDirTest returns the git-directory test of Protection.Match for the
// workspace ws: a directory with a HEAD, objects or refs entry, looked up
// beneath ws (os.Root), memoized. Safe for concurrent use.
func GitDirTest(ws string) func(dir string) bool {
	var mu sync.Mutex
	memo := map[string]bool{}
	return func(dir string) bool {
		mu.Lock()
		defer mu.Unlock()
		if v, ok := memo[dir]; ok {
			return v
		}
		v := false
		if root, err := os.OpenRoot(ws); err == nil {
			for _, name := range gitDirNames {
				if _, err := root.Lstat(dir + "/" + name); err == nil {
					v = true
					break
				}
			}
			root.Close()
		}
		memo[dir] = v
		return v
	}
}
