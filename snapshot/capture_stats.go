package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/config"
)

// captureRecord is what the change capture keeps across processes (the
// file "capture.json" in the store): how many full-scan checks of an
// incremental capture ran and disagreed, and the last disagreement.
type captureRecord struct {
	Checks       int64     `json:"checks"`
	Mismatches   int64     `json:"mismatches"`
	LastMismatch time.Time `json:"last_mismatch,omitzero"`
	LastPaths    []string  `json:"last_paths,omitempty"`
}

func readCaptureRecord(dir string) (captureRecord, error) {
	var r captureRecord
	data, err := os.ReadFile(filepath.Join(dir, "capture.json"))
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}

// noteCheck adds one check's outcome to the store's record. It runs under
// the store lock (scans do); a failure to write it is only logged.
func (s *Store) noteCheck(mismatch []string) {
	r, err := readCaptureRecord(s.dir)
	if err != nil {
		r = captureRecord{}
	}
	r.Checks++
	if len(mismatch) > 0 {
		r.Mismatches++
		r.LastMismatch, r.LastPaths = s.opts.now().UTC(), mismatch
	}
	data, _ := json.Marshal(r)
	if err := writeFileRename(s.path("capture.json"), data, 0o600, false); err != nil {
		s.opts.log.Warn("snapshot: saving change capture counters", "err", err)
	}
}

// CaptureReport says how cfg's workspace's changes are captured: the mode
// a store opened now would use (starting and stopping a watcher to find
// out), and the checks recorded so far (Checks, Mismatches, LastFull holds
// the paths of the last mismatch). It is for `agentbox doctor`.
func CaptureReport(cfg *config.Config) (CaptureStats, error) {
	st := CaptureStats{Mode: "scan"}
	r, err := readCaptureRecord(filepath.Join(cfg.WorkspaceStateDir(), "snapshots"))
	if err != nil {
		return st, fmt.Errorf("snapshot: change capture record: %w", err)
	}
	st.Checks, st.Mismatches = r.Checks, r.Mismatches
	if r.Mismatches > 0 {
		st.LastFull = fmt.Sprintf("last mismatch %s at %v", r.LastMismatch.Format(time.RFC3339), r.LastPaths)
	}
	if cfg.Snapshot.ChangeCapture != CaptureAuto {
		st.Reason = "snapshot.change_capture is " + cfg.Snapshot.ChangeCapture
		return st, nil
	}
	real, err := filepath.EvalSymlinks(cfg.Workspace)
	if err != nil {
		st.Reason = err.Error()
		return st, nil
	}
	w, err := startWatcher(real)
	if err != nil {
		st.Reason = err.Error()
		return st, nil
	}
	w.close()
	st.Mode = "watch"
	return st, nil
}
