// Package atomicfile is agentbox's one way to replace a file on disk: a
// temporary file in the destination's directory is written, given its
// mode, fsynced, renamed over the destination, and the directory is
// fsynced. A reader sees the old content or the new, never a mix; after
// WriteFile or Commit returns nil the new content survives a crash.
//
// CommitNoSync is the same without the two fsyncs, for files that can be
// rebuilt (caches): still atomic for concurrent readers, not durable.
// CommitWith is for a caller that orders several durable writes itself:
// its own work runs during the file's fsync, before the rename, and the
// caller fsyncs the directory (SyncDir) when the new name must be durable.
//
// Temporary files are named ".tmp-<base>-<random>" so that a process
// recovering after a crash can recognise and remove leftovers.
//
// It sits under config because every agentbox package may import it
// without an import arrow running back up; it imports nothing of
// agentbox. Functions are safe for concurrent use on different
// destinations; a File belongs to one goroutine.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary file this package makes.
const TempPrefix = ".tmp-"

// WriteFile replaces name with data and mode perm, atomically and
// durably. The directory must exist.
func WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := Create(filepath.Dir(name), filepath.Base(name))
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit(name, perm)
}

// File is a temporary file that becomes its destination on Commit.
// Close discards it unless it was committed, so a deferred Close cleans
// up after every failure.
type File struct {
	f    *os.File
	dir  string
	done bool
}

// Create makes a temporary file in dir for a destination whose base
// name is base (base only names the temporary file; Commit picks the
// destination, which must be in dir).
func Create(dir, base string) (*File, error) {
	f, err := os.CreateTemp(dir, TempPrefix+base+"-*")
	if err != nil {
		return nil, err
	}
	return &File{f: f, dir: dir}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Name is the temporary file's path.
func (f *File) Name() string { return f.f.Name() }

// Commit gives the file mode perm, fsyncs it, renames it to name (in the
// directory given to Create) and fsyncs the directory.
func (f *File) Commit(name string, perm os.FileMode) error {
	return f.commit(name, perm, true, true, nil)
}

// CommitNoSync is Commit without the fsyncs: atomic, not durable.
func (f *File) CommitNoSync(name string, perm os.FileMode) error {
	return f.commit(name, perm, false, false, nil)
}

// CommitWith is Commit for a caller that orders several durable writes:
// also (which may be nil) runs concurrently with the file's fsync, and
// both end before the rename, so what also makes durable is durable
// before anyone can see the new content, for one wait on the disk instead
// of two. If either fails the destination is left as it was and the
// error is returned (also's first). The directory is not fsynced: the new
// name is durable once the caller has called SyncDir, later or once for
// several files.
func (f *File) CommitWith(name string, perm os.FileMode, also func() error) error {
	return f.commit(name, perm, true, false, also)
}

// commit gives the file mode perm, fsyncs it if syncFile is set (while
// also runs), renames it to name and fsyncs the directory if syncDir is set.
func (f *File) commit(name string, perm os.FileMode, syncFile, syncDir bool, also func() error) error {
	if f.done {
		return errors.New("atomicfile: already committed or closed")
	}
	if filepath.Dir(name) != filepath.Clean(f.dir) {
		return errors.New("atomicfile: " + name + " is not in " + f.dir)
	}
	if err := f.f.Chmod(perm); err != nil {
		return err
	}
	if syncFile {
		if err := f.syncWith(also); err != nil {
			return err
		}
	}
	if err := f.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.f.Name(), name); err != nil {
		return err
	}
	f.done = true
	if !syncDir {
		return nil
	}
	return SyncDir(f.dir)
}

// syncWith fsyncs the file while also (if not nil) runs, and returns
// also's error, else the fsync's.
func (f *File) syncWith(also func() error) error {
	if also == nil {
		return f.f.Sync()
	}
	alsoErr := make(chan error, 1)
	go func() { alsoErr <- also() }()
	err := f.f.Sync()
	if aerr := <-alsoErr; aerr != nil {
		return aerr
	}
	return err
}

// Close removes the temporary file unless it was committed.
func (f *File) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	f.f.Close()
	return os.Remove(f.f.Name())
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error { return Sync(dir) }

// Sync fsyncs the file or directory at name (opened read-only), for
// content written earlier without fsync.
func Sync(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
