package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/snapshot"
)

// captureBenchPause is the time between two calls: an agent's turn is far
// longer. The watch store copies its manifest map in the background after
// a scan; the pause lets it finish, as the command's run and the agent's
// turn do in real use.
const captureBenchPause = 100 * time.Millisecond

// CaptureRow compares, in one run, a mutating call's change capture
// with the fanotify watcher against full scans.
type CaptureRow struct {
	Name   string  `json:"name"`
	Watch  float64 `json:"watch_ms"`
	Scan   float64 `json:"scan_ms"`
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target_ms,omitempty"`
	Met    bool    `json:"met"`
	Mode   string  `json:"mode"` // the watch store's mode: "watch", or "scan" when no watcher could start
}

// benchCapture opens two stores on tree, one with change_capture auto and
// one with scan, and times reps whole calls (Begin, append to one file,
// Finish) on each, alternating: the capture (time in the pre- and
// post-scans) and the whole Begin+Finish.
func benchCapture(ctx context.Context, label, tree, stateRoot, target string, reps int, logw io.Writer) ([]CaptureRow, error) {
	open := func(mode string) (*snapshot.Store, error) {
		st, err := snapshot.Open(ctx, filepath.Join(stateRoot, label+"-"+mode), tree, snapshot.WithChangeCapture(mode), snapshot.WithCaptureCheck(0, 0))
		if err != nil {
			return nil, err
		}
		if _, err := st.Checkpoint(ctx, "first", snapshot.CallInfo{}); err != nil {
			st.Close()
			return nil, err
		}
		return st, nil
	}
	watch, err := open(snapshot.CaptureAuto)
	if err != nil {
		return nil, err
	}
	defer watch.Close()
	scan, err := open(snapshot.CaptureScan)
	if err != nil {
		return nil, err
	}
	defer scan.Close()
	mode := watch.CaptureStats().Mode
	if mode != "watch" {
		fmt.Fprintf(logw, "  (no watcher: %s)\n", watch.CaptureStats().Reason)
	}
	call := func(st *snapshot.Store, i int) (capture, whole time.Duration, err error) {
		before := st.CaptureStats().ScanTime
		start := time.Now()
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Bash", Summary: "echo >> " + target}, snapshot.Whole())
		if err != nil {
			return 0, 0, err
		}
		mid := time.Now()
		f, err := os.OpenFile(filepath.Join(tree, target), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			c.Abort(ctx)
			return 0, 0, err
		}
		fmt.Fprintf(f, "// call %d\n", i)
		f.Close()
		resume := time.Now()
		e, err := c.Finish(ctx)
		if err != nil {
			return 0, 0, err
		}
		whole = time.Since(resume) + mid.Sub(start)
		if len(e.Changes) != 1 {
			return 0, 0, fmt.Errorf("a one-file call recorded %d changes", len(e.Changes))
		}
		return st.CaptureStats().ScanTime - before, whole, nil
	}
	// One warm-up call each (the scan store's first: its change is the
	// watch store's to take in its warm-up). Then each store's calls in a
	// block, so that one store's calls are not the other's "edits between
	// calls", with a pause between calls as an agent makes (not timed).
	for i, st := range []*snapshot.Store{scan, watch} {
		if _, _, err := call(st, -1-i); err != nil {
			return nil, err
		}
	}
	var wc, ww, sc, sw []time.Duration
	for i := 0; i < reps; i++ {
		time.Sleep(captureBenchPause)
		c, w, err := call(watch, i)
		if err != nil {
			return nil, err
		}
		wc, ww = append(wc, c), append(ww, w)
	}
	for i := 0; i < reps; i++ {
		time.Sleep(captureBenchPause)
		c, w, err := call(scan, reps+i)
		if err != nil {
			return nil, err
		}
		sc, sw = append(sc, c), append(sw, w)
	}
	// File-scoped calls (a Write of one file): no scan at all, so both
	// stores should take the same time, which must not grow with the
	// tree.
	fileCall := func(st *snapshot.Store, i int) (time.Duration, error) {
		start := time.Now()
		c, err := st.Begin(ctx, snapshot.CallInfo{Tool: "Write", Summary: target}, snapshot.File(target))
		if err != nil {
			return 0, err
		}
		mid := time.Now()
		if err := os.WriteFile(filepath.Join(tree, target), fmt.Appendf(nil, "// write %d\n", i), 0o644); err != nil {
			c.Abort(ctx)
			return 0, err
		}
		resume := time.Now()
		e, err := c.Finish(ctx)
		if err != nil {
			return 0, err
		}
		if len(e.Changes) != 1 {
			return 0, fmt.Errorf("a one-file Write recorded %d changes", len(e.Changes))
		}
		return time.Since(resume) + mid.Sub(start), nil
	}
	var wf, sf []time.Duration
	for _, st := range []*snapshot.Store{watch, scan} { // in blocks, as above
		for i := 0; i < reps; i++ {
			time.Sleep(captureBenchPause)
			d, err := fileCall(st, i)
			if err != nil {
				return nil, err
			}
			if st == watch {
				wf = append(wf, d)
			} else {
				sf = append(sf, d)
			}
		}
	}
	row := func(name string, w, s []time.Duration, target float64) CaptureRow {
		r := CaptureRow{Name: name, Watch: ms(median(w)), Scan: ms(median(s)), Target: target, Mode: mode}
		if r.Scan > 0 {
			r.Ratio = r.Watch / r.Scan
		}
		r.Met = target == 0 || r.Watch <= target
		fmt.Fprintf(logw, "  %s: watch %.2f ms, scan %.2f ms\n", name, r.Watch, r.Scan)
		return r
	}
	return []CaptureRow{
		row(label+": capture (2 scans)", wc, sc, 10),
		row(label+": whole call", ww, sw, 0),
		row(label+": file-scoped call (a Write)", wf, sf, 0),
	}, nil
}

// snapGenerateTree writes n small files (a few distinct contents) in
// directories of 1000 under dir.
func snapGenerateTree(dir string, n int) error {
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%06d.txt", i)), fmt.Appendf(nil, "generated file %d\n", i%97), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// benchCaptureTrees runs benchCapture on a copy of src and on a generated
// tree of big files (skipped when big is 0).
func benchCaptureTrees(ctx context.Context, src string, big, reps int, logw io.Writer) ([]CaptureRow, error) {
	tmp, err := os.MkdirTemp("", "agentbox-bench-capture-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "src")
	if out, err := exec.CommandContext(ctx, "cp", "-a", src, tree).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copying %s: %v: %s", src, err, out)
	}
	rows, err := benchCapture(ctx, "Go tree", tree, filepath.Join(tmp, "state"), filepath.Join("fmt", "print.go"), reps, logw)
	if err != nil {
		return nil, err
	}
	if big > 0 {
		gen := filepath.Join(tmp, "big")
		fmt.Fprintf(logw, "  generating %d files\n", big)
		if err := snapGenerateTree(gen, big); err != nil {
			return nil, err
		}
		more, err := benchCapture(ctx, fmt.Sprintf("%dk files", big/1000), gen, filepath.Join(tmp, "state"), filepath.Join("d000", "f000000.txt"), reps, logw)
		if err != nil {
			return nil, err
		}
		rows = append(rows, more...)
	}
	return rows, nil
}

// writeCaptureRows prints the change-capture rows (nothing when there are none).
func writeCaptureRows(w io.Writer, rows []CaptureRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nchange capture: a call appending to one file, %v between calls (medians; watch = fanotify, scan = full scans)\n", captureBenchPause)
	fmt.Fprintf(w, "%-32s %12s %12s %8s %8s %s\n", "", "watch", "scan", "ratio", "target", "")
	for _, r := range rows {
		tgt, mark := "", ""
		if r.Target > 0 {
			tgt, mark = fmt.Sprintf("≤%.0fms", r.Target), "met"
			if !r.Met {
				mark = "NOT MET"
			}
		}
		if r.Mode != "watch" {
			mark += " (no watcher)"
		}
		fmt.Fprintf(w, "%-32s %10.2fms %10.2fms %8.3f %8s %s\n", r.Name, r.Watch, r.Scan, r.Ratio, tgt, mark)
	}
	return nil
}
