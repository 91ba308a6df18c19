package config

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// What a Closure depends on.
//
// A Closure is a deterministic function of what its builder observed:
// the type (or absence) of the paths it looked up, the identity and times
// of the trigger files it read, the directories it listed and the entries
// the whole-tree walk acted on. Every observation goes through obsRoot,
// which records it (the walk's listings excepted: they are too many, and
// a caller with an entry-change feed checks them with WalkAffected). When
// every observation would come out the same again, a new build would make
// the same decisions and return the same protection — so a caller may
// reuse the Closure (ClosureCache).

// obsKind is what one observation asked.
type obsKind uint8

const (
	obsLstat obsKind = iota // type or absence, final symlink not followed
	obsStat                 // type or absence, symlinks followed
	obsRead                 // a file's content: identity, size and times
	obsList                 // a directory's entries: identity and times
	obsLink                 // a symlink's target
)

// observation is one recorded look at the workspace.
type observation struct {
	kind obsKind
	rel  string
	id   fileID
}

// fileID is what an observation saw: an error, or the parts of a stat
// that the observation's kind depends on (type only for obsLstat and
// obsStat; identity and times for obsRead and obsList; the target for
// obsLink).
type fileID struct {
	err          string
	typ          fs.FileMode
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	target       string
}

// racyWindow: a file whose ctime or mtime is this close to (or after) the
// start of the build may have been changed again within the same
// timestamp tick without its times moving; such a Closure is not reused.
const racyWindow = 100 * time.Millisecond

// obsRoot is an os.Root that records what the closure builder observes.
type obsRoot struct {
	r     *os.Root
	start time.Time
	obs   []observation
	// racy: a read file or listed directory changed too recently for its
	// times to vouch for its content (see racyWindow).
	racy bool
	// blind: something was observed whose outcome may change without a
	// trace in times or entries (an error other than absence).
	blind bool
}

func errID(err error) fileID {
	if isNotExist(err) {
		return fileID{err: "absent"}
	}
	return fileID{err: err.Error()}
}

func typeID(fi fs.FileInfo, err error) fileID {
	if err != nil {
		return errID(err)
	}
	return fileID{typ: fi.Mode().Type()}
}

// fullID is the identity, size and times of fi (ctime cannot be set by
// a user: any change of content, name or mode moves it).
func fullID(fi fs.FileInfo, err error) fileID {
	if err != nil {
		return errID(err)
	}
	id := fileID{typ: fi.Mode().Type(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
		id.ctime = st.Ctim.Nano()
	}
	return id
}

func (o *obsRoot) record(kind obsKind, rel string, id fileID) {
	if id.err != "" && id.err != "absent" {
		o.blind = true
	}
	if kind == obsRead || kind == obsList {
		if id.err == "" && (id.ctime == 0 || id.ctime > o.start.Add(-racyWindow).UnixNano() || id.mtime > o.start.Add(-racyWindow).UnixNano()) {
			o.racy = true
		}
	}
	o.obs = append(o.obs, observation{kind: kind, rel: rel, id: id})
}

func (o *obsRoot) Lstat(rel string) (fs.FileInfo, error) {
	fi, err := o.r.Lstat(rel)
	o.record(obsLstat, rel, typeID(fi, err))
	return fi, err
}

func (o *obsRoot) Stat(rel string) (fs.FileInfo, error) {
	fi, err := o.r.Stat(rel)
	o.record(obsStat, rel, typeID(fi, err))
	return fi, err
}

func (o *obsRoot) Readlink(rel string) (string, error) {
	t, err := o.r.Readlink(rel)
	id := fileID{target: t}
	if err != nil {
		id = errID(err)
	}
	o.record(obsLink, rel, id)
	return t, err
}

// open opens rel non-blocking (a FIFO planted at a trigger's name never
// hangs the build) and records the file it got, stat'ed before anything
// is read from it: a change after that moves the times the next check
// compares. list says it is a directory to be listed.
func (o *obsRoot) open(rel string, list bool) (*os.File, fs.FileInfo, error) {
	kind, flags := obsRead, os.O_RDONLY|syscall.O_NONBLOCK
	if list {
		kind, flags = obsList, flags|syscall.O_DIRECTORY
	}
	f, err := o.r.OpenFile(rel, flags, 0)
	if err != nil {
		o.record(kind, rel, errID(err))
		return nil, nil, err
	}
	fi, err := f.Stat()
	o.record(kind, rel, fullID(fi, err))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ownerObservation is one of the owner's files outside the workspace
// (a global git config) as stat'ed by path when a closure was built.
type ownerObservation struct {
	path string
	id   fileID
}

// observeOwner stats the owner's files outside the workspace that the
// build reads; one changed too recently makes the build racy.
func (o *obsRoot) observeOwner(files []string) []ownerObservation {
	out := make([]ownerObservation, 0, len(files))
	for _, f := range files {
		id := fullID(os.Stat(f))
		if id.err == "" && (id.ctime == 0 || id.ctime > o.start.Add(-racyWindow).UnixNano() || id.mtime > o.start.Add(-racyWindow).UnixNano()) {
			o.racy = true
		}
		out = append(out, ownerObservation{f, id})
	}
	return out
}

// ownerStill reports whether the owner's files a closure read are as
// they were (no change feed covers them: they lie outside the workspace).
func ownerStill(obs []ownerObservation) bool {
	for _, o := range obs {
		if fullID(os.Stat(o.path)) != o.id {
			return false
		}
	}
	return true
}

// still reports whether every observation comes out the same now (the
// same question asked through r).
func still(r *os.Root, obs []observation) bool {
	for _, o := range obs {
		var id fileID
		switch o.kind {
		case obsLstat:
			id = typeID(r.Lstat(o.rel))
		case obsStat:
			id = typeID(r.Stat(o.rel))
		case obsRead, obsList:
			id = fullID(r.Stat(o.rel))
		case obsLink:
			t, err := r.Readlink(o.rel)
			if id = (fileID{target: t}); err != nil {
				id = errID(err)
			}
		}
		if id != o.id {
			return false
		}
	}
	return true
}

// walkState is what the whole-tree walk of a Closure found: the entries
// it acted on (a symlink with a protected name, an .envrc, a nested .git)
// and whether it saw the whole tree.
type walkState struct {
	done  bool
	marks map[string]bool
	// partial: a directory could not be listed or the walk stopped at
	// maxWalk; what it missed could appear without an entry changing.
	partial bool
}

// walkSkips reports whether the walk never lists the directory holding
// rel: one of its parents is a .git or node_modules directory.
func walkSkips(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == ".git" || p == "node_modules" {
			return true
		}
	}
	return false
}

// walkActs reports whether the walk acts on the entry rel of type typ
// (see closureBuilder.walk): an .envrc below the root, a nested .git, a
// symlink whose name is protected or is a directory a pattern reaches
// into.
func walkActs(rel string, typ fs.FileMode, linkName func(string) bool) bool {
	base := path.Base(rel)
	switch {
	case base == ".envrc" && rel != ".envrc":
		return true
	case base == ".git" && path.Dir(rel) != ".":
		return true
	case typ&fs.ModeSymlink != 0:
		// A protected name, or a way to a PATH directory of installed
		// dependencies (resolveShadowLinks).
		return linkName(rel) || isShadowLink(rel)
	}
	return false
}

// obsFS is the fs.FS view of an obsRoot that fs.Glob reads through:
// every directory a glob lists and every name it stats is recorded like
// the builder's own looks, so a new match makes the kept closure stale.
type obsFS struct{ o *obsRoot }

func (f obsFS) Open(name string) (fs.File, error) { return f.o.r.FS().Open(name) }

// ReadDir implements fs.ReadDirFS (sorted by name, as fs.ReadDir is).
func (f obsFS) ReadDir(name string) ([]fs.DirEntry, error) {
	d, _, err := f.o.open(name, true)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Stat implements fs.StatFS.
func (f obsFS) Stat(name string) (fs.FileInfo, error) { return f.o.Stat(name) }
