package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() { registerBench(newBenchSnapshotCmd) }

type snapBenchRow struct {
	Name   string  `json:"name"`
	Ours   float64 `json:"ours"`
	Git    float64 `json:"git"`
	Unit   string  `json:"unit"`
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

func newBenchSnapshotCmd(a *app) *cobra.Command {
	var src string
	var reps int
	var keep bool
	var big int
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Snapshot store against a shadow git repository on a copy of the Go source tree",
		Long: `Copies a source tree (default: $(go env GOROOT)/src) twice and measures, in
the same run, agentbox's snapshot store against a shadow git repository
(GIT_DIR outside the tree): first snapshot (checkpoint vs git add -A &&
git commit), no-change snapshot, one-file-change snapshot, a whole
journaled call (scan before and after), whole-tree restore after deleting
everything (rollback vs git checkout -- .), a file-scoped call (a Write:
pre-image, write, post-image, manifest update; vs git add of that file
and git commit), and store size against the tree size. Times are
medians; ratios are ours / git.

Then change capture: a journaled call that appends to one file, on a copy
of the tree and on a generated tree of --big files, with the fanotify
watcher (snapshot.change_capture auto; needs root) against full scans, in
the same run: the time in the two scans (target 10 ms) and the whole
Begin+Finish (which also saves the manifest and commits the entry).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if src == "" {
				out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
				if err != nil {
					return fmt.Errorf("finding GOROOT (pass --src): %w", err)
				}
				src = filepath.Join(strings.TrimSpace(string(out)), "src")
			}
			if _, err := exec.LookPath("git"); err != nil {
				return errors.New("git is needed as the peer: install it")
			}
			rows, info, err := benchSnapshot(ctx, src, reps, keep, a.stderr())
			if err != nil {
				return err
			}
			capRows, err := benchCaptureTrees(ctx, src, big, reps, a.stderr())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return writeJSON(a.stdout(), map[string]any{"tree": info, "results": rows, "capture": capRows})
			}
			w := a.stdout()
			fmt.Fprintf(w, "tree: %s (%d files, %d dirs, %d symlinks, %.1f MB); %d CPUs; medians of %d\n",
				src, info.Files, info.Dirs, info.Symlinks, float64(info.Bytes)/1e6, runtime.NumCPU(), reps)
			fmt.Fprintf(w, "%-26s %12s %12s %8s %8s %s\n", "", "agentbox", "git", "ratio", "target", "")
			for _, r := range rows {
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
			printCaptureRows(w, capRows)
			return nil
		},
	}
	cmd.Flags().StringVar(&src, "src", "", "tree to copy (default: $(go env GOROOT)/src)")
	cmd.Flags().IntVar(&reps, "n", 5, "repetitions of the repeated measurements")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary copies")
	cmd.Flags().IntVar(&big, "big", 200000, "files in the generated tree of the change-capture rows (0: skip it)")
	return cmd
}

type snapTreeInfo struct {
	Files    int   `json:"files"`
	Dirs     int   `json:"dirs"`
	Symlinks int   `json:"symlinks"`
	Bytes    int64 `json:"bytes"`
}

func snapMeasureTree(dir string) (snapTreeInfo, error) {
	var ti snapTreeInfo
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

func snapMedian(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func snapMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func benchSnapshot(ctx context.Context, src string, reps int, keep bool, logw interface{ Write([]byte) (int, error) }) ([]snapBenchRow, snapTreeInfo, error) {
	if reps < 1 {
		reps = 1
	}
	tmp, err := os.MkdirTemp("", "agentbox-bench-snapshot-")
	if err != nil {
		return nil, snapTreeInfo{}, err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Fprintln(logw, "keeping", tmp)
	}
	ours, theirs := filepath.Join(tmp, "ours"), filepath.Join(tmp, "git")
	gitDir, stateDir := filepath.Join(tmp, "gitdir"), filepath.Join(tmp, "state")
	for _, d := range []string{ours, theirs} {
		if out, err := exec.CommandContext(ctx, "cp", "-a", src, d).CombinedOutput(); err != nil {
			return nil, snapTreeInfo{}, fmt.Errorf("copying %s: %v: %s", src, err, out)
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

	var rows []snapBenchRow
	add := func(name string, o, g time.Duration, target float64) {
		r := snapBenchRow{Name: name, Ours: snapMS(o), Git: snapMS(g), Unit: "ms", Target: target}
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
	add("no-change snapshot", snapMedian(os1), snapMedian(gs1), 0.5)

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
	add("one-file-change snapshot", snapMedian(os2), snapMedian(gs2), 0.5)

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
	add("no-change call (2 scans)", snapMedian(os3), snapMedian(gs1), 0)

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
	add("file-scoped call", snapMedian(os4), snapMedian(gs4), 0)

	// Whole-tree restore after deleting everything (the deletion is a
	// journaled call; the rollback to just before it is timed).
	var or, gr []time.Duration
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
		first, second := restoreOurs, restoreGit
		if i%2 == 1 { // alternate who goes first: load drifts
			first, second = second, first
		}
		if err := first(); err != nil {
			return nil, info, err
		}
		if err := second(); err != nil {
			return nil, info, err
		}
	}
	add("whole-tree restore", snapMedian(or), snapMedian(gr), 1)
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
	rows = append(rows, snapBenchRow{Name: "store size / tree size", Ours: float64(storeBytes) / 1e6, Git: float64(gitBytes) / 1e6, Unit: "MB",
		Ratio: float64(storeBytes) / float64(info.Bytes), Target: 1.05, Met: float64(storeBytes) <= 1.05*float64(info.Bytes)})
	return rows, info, nil
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
