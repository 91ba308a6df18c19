package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/audit"
)

// The pure parts of `agentbox bench load`: the call mix, the statistics,
// the completeness check of the journal and the audit log, and the report.

// Row labels of the load mix. Bash is split by what the command does: a
// read-only command, one that writes a file, and the slow one of a few
// seconds that writes a file at its end.
const (
	loadRead     = "Read"
	loadGrep     = "Grep"
	loadGlob     = "Glob"
	loadWrite    = "Write"
	loadEdit     = "Edit"
	loadBashRO   = "Bash read-only"
	loadBashMut  = "Bash mutating"
	loadBashSlow = "Bash slow"
)

// loadKinds is the order of the report's rows.
var loadKinds = []string{loadRead, loadGrep, loadGlob, loadWrite, loadEdit, loadBashRO, loadBashMut, loadBashSlow}

// loadPlan is one call of the mix, before it runs.
type loadPlan struct {
	Kind string
	Tool string // the MCP tool called
	Args map[string]any
	// Want is text the result must contain ("" for none).
	Want string
	// Path is the workspace-relative path a mutating call must change
	// ("" for a read-only call).
	Path string
}

// loadMix plans the calls of session s on workspace ws: calls calls,
// and when slowSession the slow shell of slow (0: none) once every
// loadSlowEvery calls. Tools get absolute paths, shell commands relative
// ones (they run in the workspace). Call 0 is always a Read: Edit needs
// the file read first. The same arguments give the same plan.
func loadMix(ws string, s, calls int, slow time.Duration, slowSession bool) []loadPlan {
	rng := rand.New(rand.NewPCG(uint64(s), 42))
	dir := fmt.Sprintf("s%d", s)
	notes := dir + "/notes.txt"
	abs := func(rel string) string { return filepath.Join(ws, filepath.FromSlash(rel)) }
	line2 := fmt.Sprintf("session %d line two", s)
	out := make([]loadPlan, 0, calls)
	for i := range calls {
		tok := fmt.Sprintf("tok-s%d-c%d", s, i)
		var p loadPlan
		switch k := rng.IntN(20); {
		case i == 0 || k < 5:
			p = loadPlan{Kind: loadRead, Tool: "Read", Args: map[string]any{"file_path": abs(notes)}, Want: fmt.Sprintf("session %d line", s)}
		case k < 7:
			p = loadPlan{Kind: loadGrep, Tool: "Grep", Args: map[string]any{"pattern": fmt.Sprintf("session %d", s), "path": abs(dir), "output_mode": "files_with_matches"}, Want: "notes.txt"}
		case k < 9:
			p = loadPlan{Kind: loadGlob, Tool: "Glob", Args: map[string]any{"pattern": "*.txt", "path": abs(dir)}, Want: "notes.txt"}
		case k < 11:
			p = loadPlan{Kind: loadBashRO, Tool: "Bash", Args: map[string]any{"command": "echo " + tok}, Want: tok}
		case k < 13:
			path := fmt.Sprintf("%s/bash-%d.txt", dir, i)
			p = loadPlan{Kind: loadBashMut, Tool: "Bash", Args: map[string]any{"command": "echo " + tok + " > " + path}, Path: path}
		case k < 16:
			path := fmt.Sprintf("%s/write-%d.txt", dir, i)
			p = loadPlan{Kind: loadWrite, Tool: "Write", Args: map[string]any{"file_path": abs(path), "content": tok + "\n"}, Path: path}
		default:
			// Inserts after line two's text; the old text stays unique
			// for the next Edit.
			p = loadPlan{Kind: loadEdit, Tool: "Edit", Args: map[string]any{"file_path": abs(notes), "old_string": line2, "new_string": line2 + " " + tok}, Path: notes}
		}
		if slowSession && slow > 0 && i%loadSlowEvery == loadSlowEvery/2 {
			path := fmt.Sprintf("%s/slow-%d.txt", dir, i)
			secs := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", slow.Seconds()), "0"), ".")
			p = loadPlan{Kind: loadBashSlow, Tool: "Bash", Args: map[string]any{"command": "sleep " + secs + "; echo " + tok + " > " + path}, Path: path}
		}
		out = append(out, p)
	}
	return out
}

// loadSlowEvery: a slow session runs its slow shell once every this many
// calls (call 5, 15, 25, ...).
const loadSlowEvery = 10

// loadSlowSession reports whether session s runs the slow shell: one
// session in four (0, 4, ...).
func loadSlowSession(s int) bool { return s%4 == 0 }

// loadCall is one call as made.
type loadCall struct {
	Session int
	// SessionID is the MCP session's id (from _meta.agentbox.session).
	SessionID string
	Kind      string
	Tool      string
	CallID    string
	Path      string
	D         time.Duration
	// Timed is false for warm-up calls (checked, not in the statistics).
	Timed bool
	// Err is why the call failed ("" when it succeeded).
	Err string
}

// LoadToolStats is one row of a run's latency table.
type LoadToolStats struct {
	Kind  string  `json:"kind"`
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	MaxMS float64 `json:"max_ms"`
}

// loadStats summarizes the timed calls per kind, in loadKinds order.
func loadStats(calls []loadCall) []LoadToolStats {
	by := map[string][]time.Duration{}
	for _, c := range calls {
		if c.Timed {
			by[c.Kind] = append(by[c.Kind], c.D)
		}
	}
	var out []LoadToolStats
	for _, k := range loadKinds {
		ds := by[k]
		if len(ds) == 0 {
			continue
		}
		out = append(out, LoadToolStats{Kind: k, N: len(ds), P50MS: pct(ds, 50), P95MS: pct(ds, 95), MaxMS: pct(ds, 100)})
	}
	return out
}

// LoadCheck is the result of reading the journal and the audit log back.
type LoadCheck struct {
	Calls   int `json:"calls"`
	Audited int `json:"audited"`
	// Mutating counts the successful calls that must have changed a
	// path; Journaled those whose journal entry holds the change.
	Mutating  int `json:"mutating"`
	Journaled int `json:"journaled"`
	// Misattributed counts changes in a journal entry to a path that
	// another call of the load meant to change.
	Misattributed   int      `json:"misattributed"`
	AuditComplete   bool     `json:"audit_complete"`
	JournalComplete bool     `json:"journal_complete"`
	Problems        []string `json:"problems,omitempty"`
}

// loadMaxProblems caps the problems listed (the counts stay exact).
const loadMaxProblems = 20

// checkLoad checks that every call has exactly one audit record (same
// call id, tool and session) and that every successful mutating call has
// a journal entry (the one its audit record names, same tool and session)
// whose changes hold the call's path. Attribution is exact: no entry holds
// a path that another call meant to change (a concurrent Write's file in a
// shell's entry, or another session's notes).
func checkLoad(calls []loadCall, recs []audit.Record, entries []snapshot.Entry) LoadCheck {
	chk := LoadCheck{Calls: len(calls)}
	problem := func(format string, args ...any) {
		if len(chk.Problems) < loadMaxProblems {
			chk.Problems = append(chk.Problems, fmt.Sprintf(format, args...))
		}
	}
	byCall := map[string][]audit.Record{}
	for _, r := range recs {
		if r.CallID != "" {
			byCall[r.CallID] = append(byCall[r.CallID], r)
		}
	}
	byID := map[string]snapshot.Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	written := map[string]bool{}       // the paths the calls meant to change
	entryCall := map[string]loadCall{} // journal entry id → its call
	for _, c := range calls {
		name := fmt.Sprintf("session %d %s %s", c.Session, c.Kind, c.CallID)
		if c.CallID == "" {
			problem("session %d %s: no call id in the result (%s)", c.Session, c.Kind, c.Err)
			continue
		}
		rs := byCall[c.CallID]
		if len(rs) != 1 {
			problem("%s: %d audit records, want 1", name, len(rs))
			continue
		}
		r := rs[0]
		if r.Tool != c.Tool || r.Session != c.SessionID {
			problem("%s: audit record of tool %q session %q, want %q %q", name, r.Tool, r.Session, c.Tool, c.SessionID)
			continue
		}
		chk.Audited++
		if c.Path == "" || c.Err != "" {
			continue
		}
		chk.Mutating++
		written[c.Path] = true
		if r.JournalID == "" {
			problem("%s: the audit record names no journal entry", name)
			continue
		}
		e, ok := byID[r.JournalID]
		switch {
		case !ok:
			problem("%s: journal entry %s is missing", name, r.JournalID)
		case e.Tool != c.Tool || e.Session != c.SessionID:
			problem("%s: journal entry %s is of tool %q session %q", name, e.ID, e.Tool, e.Session)
		case !slices.ContainsFunc(e.Changes, func(ch snapshot.Change) bool { return ch.Path == c.Path }):
			problem("%s: journal entry %s lacks %s", name, e.ID, c.Path)
		default:
			chk.Journaled++
			entryCall[e.ID] = c
		}
	}
	for _, e := range entries {
		c, ours := entryCall[e.ID]
		for _, ch := range e.Changes {
			if written[ch.Path] && (!ours || ch.Path != c.Path) {
				chk.Misattributed++
				problem("journal entry %s (%s, session %s) holds %s, which another call changed", e.ID, e.Tool, e.Session, ch.Path)
			}
		}
	}
	chk.AuditComplete = chk.Audited == chk.Calls
	chk.JournalComplete = chk.Journaled == chk.Mutating && chk.Misattributed == 0
	return chk
}

// LoadRun is one run of the load: `agentbox bench load --json` prints
// one per mode.
type LoadRun struct {
	Name string `json:"name"`
	// SerialCalls is the value of snapshot.serial_calls for the run.
	SerialCalls bool `json:"serial_calls"`
	// Skipped says why the run did not happen ("" when it did).
	Skipped        string          `json:"skipped,omitempty"`
	WallS          float64         `json:"wall_s"`
	Calls          int             `json:"calls"`
	Errors         int             `json:"errors"`
	CallsPerS      float64         `json:"calls_per_s"`
	Containers     int             `json:"containers"`
	ContainersPerS float64         `json:"containers_per_s"`
	Leaked         int             `json:"leaked"`
	Check          LoadCheck       `json:"check"`
	Tools          []LoadToolStats `json:"tools"`
	FirstErrors    []string        `json:"first_errors,omitempty"`
}

// ok reports whether the run was clean: no failed call, no leak, the
// journal and the audit log complete.
func (r LoadRun) ok() bool {
	return r.Skipped != "" || (r.Errors == 0 && r.Leaked == 0 && r.Check.AuditComplete && r.Check.JournalComplete)
}

func (r LoadRun) stat(kind string) (LoadToolStats, bool) {
	for _, s := range r.Tools {
		if s.Kind == kind {
			return s, true
		}
	}
	return LoadToolStats{}, false
}

// LoadRatio is serial/concurrent of one statistic.
type LoadRatio struct {
	Name         string  `json:"name"`
	SerialMS     float64 `json:"serial_ms"`
	ConcurrentMS float64 `json:"concurrent_ms"`
	Ratio        float64 `json:"ratio"`
}

// LoadTarget is one target of the concurrent run.
type LoadTarget struct {
	Name    string  `json:"name"`
	ValueMS float64 `json:"value_ms"`
	LimitMS float64 `json:"limit_ms"`
	Met     bool    `json:"met"`
}

// LoadReport is the whole output of `agentbox bench load`.
type LoadReport struct {
	Sessions     int          `json:"sessions"`
	CallsPerSess int          `json:"calls_per_session"`
	SlowS        float64      `json:"slow_s"`
	SlowSessions []int        `json:"slow_sessions"`
	Runs         []LoadRun    `json:"runs"`
	Ratios       []LoadRatio  `json:"ratios,omitempty"`
	Targets      []LoadTarget `json:"targets,omitempty"`
	// OK: every run that happened was clean (targets are not part of it).
	OK bool `json:"ok"`
}

// finish computes the ratios, the targets and OK from the runs.
func (rep *LoadReport) finish() {
	var conc, ser *LoadRun
	rep.OK = true
	for i := range rep.Runs {
		r := &rep.Runs[i]
		rep.OK = rep.OK && r.ok()
		if r.Skipped != "" {
			continue
		}
		if r.SerialCalls {
			ser = r
		} else {
			conc = r
		}
	}
	if conc == nil {
		return
	}
	for _, k := range []string{loadWrite, loadEdit} {
		s, ok := conc.stat(k)
		if !ok {
			continue
		}
		rep.Targets = append(rep.Targets,
			LoadTarget{Name: k + " p50", ValueMS: s.P50MS, LimitMS: 50, Met: s.P50MS <= 50},
			LoadTarget{Name: k + " p95", ValueMS: s.P95MS, LimitMS: 500, Met: s.P95MS <= 500})
		if ser == nil {
			continue
		}
		if t, ok := ser.stat(k); ok {
			rep.Ratios = append(rep.Ratios,
				LoadRatio{Name: k + " p50", SerialMS: t.P50MS, ConcurrentMS: s.P50MS, Ratio: t.P50MS / max(s.P50MS, 0.001)},
				LoadRatio{Name: k + " p95", SerialMS: t.P95MS, ConcurrentMS: s.P95MS, Ratio: t.P95MS / max(s.P95MS, 0.001)})
		}
	}
}

// WriteLoadReport prints rep for a person.
func WriteLoadReport(w io.Writer, rep LoadReport) error {
	fmt.Fprintf(w, "bench load: %d sessions × %d calls; slow shell of %gs in sessions %v (once every %d calls)\n",
		rep.Sessions, rep.CallsPerSess, rep.SlowS, rep.SlowSessions, loadSlowEvery)
	for _, r := range rep.Runs {
		fmt.Fprintf(w, "\n== %s run (snapshot.serial_calls=%t)\n", r.Name, r.SerialCalls)
		if r.Skipped != "" {
			fmt.Fprintf(w, "skipped: %s\n", r.Skipped)
			continue
		}
		fmt.Fprintf(w, "%d calls in %.1fs: %.1f calls/s sustained; %d containers created: %.1f containers/s; %d failed calls; %d containers leaked\n",
			r.Calls, r.WallS, r.CallsPerS, r.Containers, r.ContainersPerS, r.Errors, r.Leaked)
		fmt.Fprintf(w, "audit: %d/%d calls with their record (%s); journal: %d/%d mutating calls with their entry, %d misattributed (%s)\n",
			r.Check.Audited, r.Check.Calls, complete(r.Check.AuditComplete), r.Check.Journaled, r.Check.Mutating, r.Check.Misattributed, complete(r.Check.JournalComplete))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tool\tcalls\tp50 ms\tp95 ms\tmax ms\t")
		for _, s := range r.Tools {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Kind, s.N, s.P50MS, s.P95MS, s.MaxMS)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, p := range r.Check.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p)
		}
		for _, e := range r.FirstErrors {
			fmt.Fprintf(w, "  failed: %s\n", e)
		}
	}
	if len(rep.Ratios) > 0 {
		fmt.Fprintln(w, "\nserial / concurrent:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\tserial ms\tconcurrent ms\tratio\t")
		for _, r := range rep.Ratios {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1fx\t\n", r.Name, r.SerialMS, r.ConcurrentMS, r.Ratio)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w)
		for _, t := range rep.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "NOT met"
			}
			fmt.Fprintf(w, "target concurrent %s <= %g ms: %s (%.1f ms)\n", t.Name, t.LimitMS, verdict, t.ValueMS)
		}
	}
	verdict := "clean"
	if !rep.OK {
		verdict = "NOT clean (failed calls, leaked containers or an incomplete journal or audit log above)"
	}
	fmt.Fprintf(w, "runs: %s\n", verdict)
	return nil
}

// complete is how a report says whether a record is complete.
func complete(ok bool) string {
	if ok {
		return "complete"
	}
	return "INCOMPLETE"
}
