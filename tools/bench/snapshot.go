package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"golang.org/x/sys/unix"
)

// SnapshotRow is one row of the store against git.
type SnapshotRow struct {
	Name   string  `json:"name"`
	Ours   float64 `json:"ours"`
	Git    float64 `json:"git"`
	Unit   string  `json:"unit"`
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

// SnapshotOptions are the knobs of [Snapshot].
type SnapshotOptions struct {
	// Src is the tree to copy ("": $(go env GOROOT)/src).
	Src string
	// N is the repetitions of the repeated measurements.
	N int
	// Keep keeps the temporary copies (their directory goes to progress).
	Keep bool
	// Big is the files of the generated tree of the change-capture rows
	// (0: skip it).
	Big int
}

// SnapshotReport is what `agentbox bench snapshot --json` prints.
type SnapshotReport struct {
	Tree    TreeInfo      `json:"tree"`
	Results []SnapshotRow `json:"results"`
	Capture []CaptureRow  `json:"capture"`
	// Src and N are the tree measured and the repetitions, for the text
	// report.
	Src string `json:"-"`
	N   int    `json:"-"`
}

// Snapshot copies Src twice and measures, in the same run, agentbox's
// snapshot store against a shadow git repository (GIT_DIR outside the
// tree): first snapshot, no-change and one-file-change snapshots, a whole
// journaled call, a file-scoped call, whole-tree restore (with the floor
// under it: the tree copied by plain create and write) and store size
// (medians; ratios are ours / git). Then change capture: a call appending
// to one file, on a copy of the tree and on a generated tree of Big files,
// with the fanotify watcher (needs root) against full scans.
func Snapshot(ctx context.Context, progress io.Writer, o SnapshotOptions) (SnapshotReport, error) {
	rep := SnapshotReport{Src: o.Src, N: o.N}
	if rep.Src == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			return rep, fmt.Errorf("finding GOROOT (pass --src): %w", err)
		}
		rep.Src = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	if _, err := exec.LookPath("git"); err != nil {
		return rep, errors.New("git is needed as the peer: install it")
	}
	var err error
	if rep.Results, rep.Tree, err = benchSnapshot(ctx, rep.Src, o.N, o.Keep, progress); err != nil {
		return rep, err
	}
	rep.Capture, err = benchCaptureTrees(ctx, rep.Src, o.Big, o.N, progress)
	return rep, err
}

// WriteSnapshotReport prints rep for a person.
func WriteSnapshotReport(w io.Writer, rep SnapshotReport) error {
	info := rep.Tree
	fmt.Fprintf(w, "tree: %s (%d files, %d dirs, %d symlinks, %.1f MB); %d CPUs; medians of %d\n",
		rep.Src, info.Files, info.Dirs, info.Symlinks, float64(info.Bytes)/1e6, runtime.NumCPU(), rep.N)
	fmt.Fprintf(w, "%-26s %12s %12s %8s %8s %s\n", "", "agentbox", "git", "ratio", "target", "")
	for _, r := range rep.Results {
		mark := "met"
		if !r.Met {
			mark = "NOT MET"
		}
		if r.Target == 0 {
			mark = ""
		}
		tgt := ""
		if r.Target > 0 {
			tgt = fmt.Sprintf("≤%.2f", r.Target)
		}
		fmt.Fprintf(w, "%-26s %10.2f%-2s %10.2f%-2s %8.3f %8s %s\n", r.Name, r.Ours, r.Unit, r.Git, r.Unit, r.Ratio, tgt, mark)
	}
	return writeCaptureRows(w, rep.Capture)
}

// TreeInfo is the shape of a tree: counts and the bytes of its files.
type TreeInfo struct {
	Files    int   `json:"files"`
	Dirs     int   `json:"dirs"`
	Symlinks int   `json:"symlinks"`
	Bytes    int64 `json:"bytes"`
}

func snapMeasureTree(dir string) (TreeInfo, error) {
	var ti TreeInfo
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			ti.Files++
			fi, err := d.Info()
			if err != nil {
				return err
			}
			ti.Bytes += fi.Size()
		case d.IsDir():
			if p != dir {
				ti.Dirs++
			}
		case d.Type()&fs.ModeSymlink != 0:
			ti.Symlinks++
		}
		return nil
	})
	return ti, err
}

func benchSnapshot(ctx context.Context, src string, reps int, keep bool, logw io.Writer) ([]SnapshotRow, TreeInfo, error) {
	if reps < 1 {
		reps = 1
	}
	tmp, err := os.MkdirTemp("", "agentbox-bench-snapshot-")
	if err != nil {
		return nil, TreeInfo{}, err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Fprintln(logw, "keeping", tmp)
	}
	ours, theirs, floor := filepath.Join(tmp, "ours"), filepath.Join(tmp, "git"), filepath.Join(tmp, "floor")
	gitDir, stateDir := filepath.Join(tmp, "gitdir"), filepath.Join(tmp, "state")
	for _, d := range []string{ours, theirs} {
		if out, err := exec.CommandContext(ctx, "cp", "-a", src, d).CombinedOutput(); err != nil {
			return nil, TreeInfo{}, fmt.Errorf("copying %s: %v: %s", src, err, out)
		}
	}
	info, err := snapMeasureTree(ours)
	if err != nil {
		return nil, info, err
	}
	git := func(args ...string) (time.Duration, error) {
		c := exec.CommandContext(ctx, "git", args...)
		c.Env = append(os.Environ(), "GIT_DIR="+gitDir, "GIT_WORK_TREE="+theirs, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b",
			"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b", "GIT_CONFIG_NOSYSTEM=1", "HOME="+tmp)
		c.Dir = theirs
		start := time.Now()
		out, err := c.CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return time.Since(start), nil
	}
	gitSnap := func() (time.Duration, error) {
		d1, err := git("add", "-A")
		if err != nil {
			return 0, err
		}
		d2, err := git("commit", "-q", "--allow-empty", "-m", "snapshot")
		return d1 + d2, err
	}
	if _, err := git("init", "-q"); err != nil {
		return nil, info, err
	}
	st, err := snapshot.Open(ctx, stateDir, ours)
	if err != nil {
		return nil, info, err
	}
	settle := func() { // neither side pays for the other's dirty pages
		t := time.Now()
		unix.Sync()
		if d := time.Since(t); d > time.Second {
			fmt.Fprintf(logw, "  (sync took %v)\n", d.Round(time.Millisecond))
		}
	}

	var rows []SnapshotRow
	add := func(name string, o, g time.Duration, target float64) {
		r := SnapshotRow{Name: name, Ours: ms(o), Git: ms(g), Unit: "ms", Target: target}
		if g > 0 {
			r.Ratio = float64(o) / float64(g)
		}
		r.Met = target == 0 || r.Ratio <= target
		rows = append(rows, r)
		fmt.Fprintf(logw, "  %s: agentbox %.1f ms, git %.1f ms\n", name, r.Ours, r.Git)
	}

	// First snapshot.
	settle()
	start := time.Now()
	cp, err := st.Checkpoint(ctx, "first", snapshot.CallInfo{})
	if err != nil {
		return nil, info, err
	}
	oFirst := time.Since(start)
	settle()
	gFirst, err := gitSnap()
	if err != nil {
		return nil, info, err
	}
	add("first snapshot", oFirst, gFirst, 1.0/3)

	// No change.
	var os1, gs1 []time.Duration
	for i := 0; i < reps; i++ {
		settle()
		start := time.Now()
		if _, err := st.Checkpoint(ctx, "again", snapshot.CallInfo{}); err != nil {
			return nil, info, err
		}
		os1 = append(os1, time.Since(start))
		settle()
		d, err := gitSnap()
		if err != nil {
			return nil, info, err
		}
		gs1 = append(gs1, d)
	}
	add("no-change snapshot", median(os1), median(gs1), 0.5)

	// One file changed.
	var os2, gs2 []time.Duration
	target := filepath.Join("fmt", "print.go")
	for i := 0; i < reps; i++ {
		for _, root := range []string{ours, theirs} {
			f, err := os.OpenFile(filepath.Join(root, target), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return nil, info, err
			}
			fmt.Fprintf(f, "// change %d\n", i)
			f.Close()
		}
		settle()
		start := time.Now()
		e, err := st.Checkpoint(ctx, "one change", snapshot.CallInfo{})
		if err != nil {
			return nil, info, err
		}
		os2 = append(os2, time.Since(start))
		if len(e.Changes) != 1 {
			return nil, info, fmt.Errorf("one-change snapshot recorded %d changes", len(e.Changes))
		}
		settle()
		d, err := gitSnap()
		if err != nil {
			return nil, info, err
		}
		gs2 = append(gs2, d)
	}
	add("one-file-change snapshot", median(os2), median(gs2), 0.5)

	// A whole journaled call with nothing changed: scan before and after.
	var os3 []time.Duration
	for i := 0; i < reps; i++ {
		settle()
		start := time.Now()
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash"}, snapshot.Whole())
		if err != nil {
			return nil, info, err
		}
		if _, err := c.Finish(ctx); err != nil {
			return nil, info, err
		}
		os3 = append(os3, time.Since(start))
	}
	add("no-change call (2 scans)", median(os3), median(gs1), 0)

	// A file-scoped call (a Write) on the tree, whose manifest the calls
	// above saved: the pre-image, the write, the post-image and the
	// manifest update of that one path. git: the same write, then add of
	// that path and a commit.
	var os4, gs4 []time.Duration
	for i := 0; i < reps; i++ {
		line := fmt.Sprintf("// write %d\n", i)
		appendLine := func(root string) error {
			f, err := os.OpenFile(filepath.Join(root, target), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString(line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		settle()
		start := time.Now()
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: target}, snapshot.File(target))
		if err != nil {
			return nil, info, err
		}
		if err := appendLine(ours); err != nil {
			return nil, info, err
		}
		e, err := c.Finish(ctx)
		if err != nil {
			return nil, info, err
		}
		os4 = append(os4, time.Since(start))
		if len(e.Changes) != 1 {
			return nil, info, fmt.Errorf("file-scoped call recorded %d changes", len(e.Changes))
		}
		settle()
		start = time.Now()
		if err := appendLine(theirs); err != nil {
			return nil, info, err
		}
		if _, err := git("add", "--", target); err != nil {
			return nil, info, err
		}
		if _, err := git("commit", "-q", "-m", "write"); err != nil {
			return nil, info, err
		}
		gs4 = append(gs4, time.Since(start))
	}
	add("file-scoped call", median(os4), median(gs4), 0)

	// Whole-tree restore after deleting everything (the deletion is a
	// journaled call; the rollback to just before it is timed).
	var or, gr, fr []time.Duration
	if err := os.Mkdir(floor, 0o755); err != nil {
		return nil, info, err
	}
	for i := 0; i < reps; i++ {
		before, err := snapMeasureTree(ours)
		if err != nil {
			return nil, info, err
		}
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: "rm -rf *"}, snapshot.Whole())
		if err != nil {
			return nil, info, err
		}
		if err := snapClearDir(ours); err != nil {
			return nil, info, err
		}
		if _, err := c.Finish(ctx); err != nil {
			return nil, info, err
		}
		if err := snapClearDir(theirs); err != nil {
			return nil, info, err
		}
		restoreOurs := func() error {
			settle()
			start := time.Now()
			rb, err := st.Rollback(ctx, c.ID(), snapshot.CallInfo{})
			if err != nil {
				return err
			}
			or = append(or, time.Since(start))
			if back, err := snapMeasureTree(ours); err != nil || back != before {
				return fmt.Errorf("restore is incomplete: %+v, want %+v (%v; %d paths)", back, before, err, len(rb.Changes))
			}
			return nil
		}
		restoreGit := func() error {
			settle()
			d, err := git("checkout", "--", ".")
			gr = append(gr, d)
			return err
		}
		restoreFloor := func() error {
			if err := snapClearDir(floor); err != nil {
				return err
			}
			settle()
			start := time.Now()
			if err := plainCopy(src, floor); err != nil {
				return err
			}
			fr = append(fr, time.Since(start))
			return nil
		}
		order := []func() error{restoreOurs, restoreGit, restoreFloor}
		for k := range order { // rotate who goes first: load drifts
			if err := order[(i+k)%len(order)](); err != nil {
				return nil, info, err
			}
		}
	}
	add("whole-tree restore", median(or), median(gr), 1)
	add("restore floor (plain copy)", median(fr), median(gr), 0)
	_ = cp

	// Sizes.
	storeBytes, err := snapDirBytes(st.Dir())
	if err != nil {
		return nil, info, err
	}
	gitBytes, err := snapDirBytes(gitDir)
	if err != nil {
		return nil, info, err
	}
	rows = append(rows, SnapshotRow{Name: "store size / tree size", Ours: float64(storeBytes) / 1e6, Git: float64(gitBytes) / 1e6, Unit: "MB",
		Ratio: float64(storeBytes) / float64(info.Bytes), Target: 1.05, Met: float64(storeBytes) <= 1.05*float64(info.Bytes)})
	return rows, info, nil
}

// plainCopy copies the tree src into the empty directory dst the plainest
// way: directories made, each file read whole and written to a new file
// (O_EXCL), symlinks made; no modes, times or owners, no verification,
// nothing synced. It is the floor under any whole-tree restore on this
// file system: the creation of every file.
func plainCopy(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = f.Write(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		return nil
	})
}

// snapClearDir removes everything inside dir.
func snapClearDir(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// snapDirBytes is the apparent size of the files under dir, each inode
// counted once (hard links share their storage).
func snapDirBytes(dir string) (int64, error) {
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			if !seen[st.Ino] {
				seen[st.Ino] = true
				n += st.Size
			}
		}
		return nil
	})
	return n, err
}
