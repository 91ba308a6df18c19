package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/audit"
)

func TestLoadMix(t *testing.T) {
	const ws = "/w"
	plan := loadMix(ws, 3, 100, 2*time.Second, true)
	if !reflect.DeepEqual(plan, loadMix(ws, 3, 100, 2*time.Second, true)) {
		t.Fatal("the same arguments gave two plans")
	}
	if reflect.DeepEqual(plan, loadMix(ws, 2, 100, 2*time.Second, true)) {
		t.Error("sessions 2 and 3 got the same plan")
	}
	if len(plan) != 100 || plan[0].Kind != loadRead {
		t.Fatalf("%d calls, first %s; want 100, Read first", len(plan), plan[0].Kind)
	}
	kinds := map[string]int{}
	paths := map[string]bool{}
	for i, p := range plan {
		kinds[p.Kind]++
		if (p.Kind == loadBashSlow) != (i%loadSlowEvery == loadSlowEvery/2) {
			t.Errorf("call %d: %s; the slow shell belongs at every %dth call from %d", i, p.Kind, loadSlowEvery, loadSlowEvery/2)
		}
		mutating := p.Kind == loadWrite || p.Kind == loadEdit || p.Kind == loadBashMut || p.Kind == loadBashSlow
		if mutating != (p.Path != "") {
			t.Errorf("call %d %s: path %q", i, p.Kind, p.Path)
		}
		if p.Path != "" && p.Kind != loadEdit {
			if paths[p.Path] {
				t.Errorf("call %d: path %s written twice", i, p.Path)
			}
			paths[p.Path] = true
		}
		if !strings.HasPrefix(p.Path, "s3/") && p.Path != "" {
			t.Errorf("call %d: path %s outside the session's directory", i, p.Path)
		}
		for _, k := range []string{"file_path", "path"} {
			if v, ok := p.Args[k].(string); ok && !filepath.IsAbs(v) {
				t.Errorf("call %d %s: %s %q is not absolute", i, p.Kind, k, v)
			}
		}
		if cmd, ok := p.Args["command"].(string); ok && p.Path != "" && !strings.HasSuffix(cmd, "> "+p.Path) {
			t.Errorf("call %d: command %q does not write %s", i, cmd, p.Path)
		}
	}
	if kinds[loadBashSlow] != 10 {
		t.Errorf("%d slow shells in 100 calls, want 10", kinds[loadBashSlow])
	}
	for _, k := range loadKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s call in 100", k)
		}
	}
	if got := loadMix(ws, 1, 100, 2*time.Second, false); slicesAny(got, func(p loadPlan) bool { return p.Kind == loadBashSlow }) {
		t.Error("a session that is not slow runs the slow shell")
	}
	if got := loadMix(ws, 0, 100, 0, true); slicesAny(got, func(p loadPlan) bool { return p.Kind == loadBashSlow }) {
		t.Error("--slow 0 still runs the slow shell")
	}
	for _, p := range plan {
		if p.Kind == loadBashSlow {
			if cmd := p.Args["command"].(string); !strings.HasPrefix(cmd, "sleep 2; echo ") {
				t.Errorf("slow shell %q", cmd)
			}
			break
		}
	}
}

func slicesAny(ps []loadPlan, f func(loadPlan) bool) bool {
	for _, p := range ps {
		if f(p) {
			return true
		}
	}
	return false
}

func TestLoadStats(t *testing.T) {
	var calls []loadCall
	for i := 1; i <= 20; i++ {
		calls = append(calls, loadCall{Kind: loadWrite, D: time.Duration(i) * time.Millisecond, Timed: true})
	}
	calls = append(calls,
		loadCall{Kind: loadRead, D: 3 * time.Millisecond, Timed: true},
		loadCall{Kind: loadRead, D: time.Hour}, // warm-up: not counted
		loadCall{Kind: loadEdit, D: time.Hour},
	)
	got := loadStats(calls)
	want := []LoadToolStats{
		{Kind: loadRead, N: 1, P50MS: 3, P95MS: 3, MaxMS: 3},
		{Kind: loadWrite, N: 20, P50MS: 10, P95MS: 19, MaxMS: 20},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loadStats = %+v\nwant %+v", got, want)
	}
}

func TestCheckLoad(t *testing.T) {
	call := func(kind, tool, id, path string) loadCall {
		return loadCall{Session: 1, SessionID: "mcp-1", Kind: kind, Tool: tool, CallID: id, Path: path, Timed: true}
	}
	rec := func(id, tool, journal string) audit.Record {
		return audit.Record{CallID: id, Tool: tool, Session: "mcp-1", JournalID: journal}
	}
	entry := func(id, tool string, paths ...string) snapshot.Entry {
		e := snapshot.Entry{ID: id, CallInfo: snapshot.CallInfo{Session: "mcp-1", Tool: tool}}
		for _, p := range paths {
			e.Changes = append(e.Changes, snapshot.Change{Path: p, Op: snapshot.OpAdded})
		}
		return e
	}
	calls := []loadCall{
		call(loadRead, "Read", "c1", ""),
		call(loadWrite, "Write", "c2", "s1/write-1.txt"),
		call(loadBashMut, "Bash", "c3", "s1/bash-2.txt"),
		call(loadEdit, "Edit", "c4", "s1/notes.txt"),
		call(loadEdit, "Edit", "c5", "s1/notes.txt"),
	}
	recs := []audit.Record{rec("c1", "Read", ""), rec("c2", "Write", "j1"), rec("c3", "Bash", "j2"), rec("c4", "Edit", "j3"), rec("c5", "Edit", "j4")}
	entries := []snapshot.Entry{entry("j1", "Write", "s1/write-1.txt"), entry("j2", "Bash", "s1/bash-2.txt"),
		entry("j3", "Edit", "s1/notes.txt"), entry("j4", "Edit", "s1/notes.txt")}

	tests := []struct {
		name           string
		mutate         func(calls []loadCall, recs []audit.Record, entries []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry)
		audit, journal bool
		problem        string
	}{
		{name: "complete", audit: true, journal: true},
		{name: "a record missing", audit: false, journal: true, problem: "0 audit records",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				return c, r[1:], e
			}},
		{name: "a record twice", audit: false, journal: true, problem: "2 audit records",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				return c, append(r, r[0]), e
			}},
		{name: "a record of another session", audit: false, journal: true, problem: `session "mcp-2"`,
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				r[0].Session = "mcp-2"
				return c, r, e
			}},
		{name: "no call id", audit: false, journal: true, problem: "no call id",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				c[0].CallID = ""
				return c, r, e
			}},
		{name: "no journal id", audit: true, journal: false, problem: "names no journal entry",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				r[1].JournalID = ""
				return c, r, e
			}},
		{name: "entry missing", audit: true, journal: false, problem: "journal entry j2 is missing",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				return c, r, append(e[:1], e[2:]...)
			}},
		{name: "entry without the change", audit: true, journal: false, problem: "lacks s1/bash-2.txt",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				e[1].Changes[0].Path = "s1/other.txt"
				return c, r, e
			}},
		{name: "a Write's change in a shell's entry", audit: true, journal: false, problem: "journal entry j2 (Bash, session mcp-1) holds s1/write-1.txt",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				e[1].Changes = append(e[1].Changes, snapshot.Change{Path: "s1/write-1.txt", Op: snapshot.OpAdded})
				return c, r, e
			}},
		{name: "an Edit's change in a shell's entry", audit: true, journal: false, problem: "journal entry j2 (Bash, session mcp-1) holds s1/notes.txt",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				e[1].Changes = append(e[1].Changes, snapshot.Change{Path: "s1/notes.txt", Op: snapshot.OpModified})
				return c, r, e
			}},
		{name: "a change in an entry of no call of the load", audit: true, journal: false, problem: "journal entry j9 (Bash, session mcp-1) holds s1/bash-2.txt",
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				return c, r, append(e, entry("j9", "Bash", "s1/bash-2.txt"))
			}},
		{name: "a change the load did not make is not counted", audit: true, journal: true,
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				e[1].Changes = append(e[1].Changes, snapshot.Change{Path: "s1", Op: snapshot.OpModeChanged})
				return c, r, e
			}},
		{name: "a failed mutating call needs its record, not an entry", audit: true, journal: true,
			mutate: func(c []loadCall, r []audit.Record, e []snapshot.Entry) ([]loadCall, []audit.Record, []snapshot.Entry) {
				c[2].Err = "error result: denied"
				r[2].JournalID = ""
				return c, r, append(e[:1], e[2:]...)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := append([]loadCall(nil), calls...)
			r := append([]audit.Record(nil), recs...)
			var e []snapshot.Entry
			for _, x := range entries {
				x.Changes = append([]snapshot.Change(nil), x.Changes...)
				e = append(e, x)
			}
			if tt.mutate != nil {
				c, r, e = tt.mutate(c, r, e)
			}
			got := checkLoad(c, r, e)
			if got.AuditComplete != tt.audit || got.JournalComplete != tt.journal {
				t.Errorf("audit complete %t journal complete %t, want %t %t (%+v)", got.AuditComplete, got.JournalComplete, tt.audit, tt.journal, got)
			}
			if tt.problem == "" && len(got.Problems) > 0 {
				t.Errorf("problems %q", got.Problems)
			}
			if tt.problem != "" && !strings.Contains(strings.Join(got.Problems, "\n"), tt.problem) {
				t.Errorf("problems %q lack %q", got.Problems, tt.problem)
			}
		})
	}
}

func TestLoadReport(t *testing.T) {
	clean := LoadCheck{Calls: 10, Audited: 10, Mutating: 4, Journaled: 4, AuditComplete: true, JournalComplete: true}
	conc := LoadRun{Name: "concurrent", WallS: 2, Calls: 10, CallsPerS: 5, Containers: 6, ContainersPerS: 3, Check: clean,
		Tools: []LoadToolStats{{Kind: loadWrite, N: 3, P50MS: 20, P95MS: 600, MaxMS: 700}, {Kind: loadEdit, N: 2, P50MS: 40, P95MS: 100, MaxMS: 100}}}
	ser := conc
	ser.Name, ser.SerialCalls = "serial", true
	ser.Tools = []LoadToolStats{{Kind: loadWrite, N: 3, P50MS: 2000, P95MS: 6000, MaxMS: 7000}, {Kind: loadEdit, N: 2, P50MS: 400, P95MS: 1000, MaxMS: 1000}}

	rep := LoadReport{Sessions: 2, CallsPerSess: 5, SlowS: 3, SlowSessions: []int{0}, Runs: []LoadRun{conc, ser}}
	rep.finish()
	if !rep.OK {
		t.Error("clean runs reported not OK")
	}
	wantRatios := []LoadRatio{
		{Name: "Write p50", SerialMS: 2000, ConcurrentMS: 20, Ratio: 100},
		{Name: "Write p95", SerialMS: 6000, ConcurrentMS: 600, Ratio: 10},
		{Name: "Edit p50", SerialMS: 400, ConcurrentMS: 40, Ratio: 10},
		{Name: "Edit p95", SerialMS: 1000, ConcurrentMS: 100, Ratio: 10},
	}
	if !reflect.DeepEqual(rep.Ratios, wantRatios) {
		t.Errorf("ratios %+v\nwant %+v", rep.Ratios, wantRatios)
	}
	wantTargets := []LoadTarget{
		{Name: "Write p50", ValueMS: 20, LimitMS: 50, Met: true},
		{Name: "Write p95", ValueMS: 600, LimitMS: 500, Met: false},
		{Name: "Edit p50", ValueMS: 40, LimitMS: 50, Met: true},
		{Name: "Edit p95", ValueMS: 100, LimitMS: 500, Met: true},
	}
	if !reflect.DeepEqual(rep.Targets, wantTargets) {
		t.Errorf("targets %+v\nwant %+v", rep.Targets, wantTargets)
	}
	var b bytes.Buffer
	if err := WriteLoadReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"== concurrent run (snapshot.serial_calls=false)",
		"== serial run (snapshot.serial_calls=true)",
		"10 calls in 2.0s: 5.0 calls/s sustained; 6 containers created: 3.0 containers/s; 0 failed calls; 0 containers leaked",
		"target concurrent Write p95 <= 500 ms: NOT met (600.0 ms)",
		"target concurrent Edit p50 <= 50 ms: met (40.0 ms)",
		"runs: clean",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}

	if !regexp.MustCompile(`(?m)^ *Write p50 +2000\.0 +20\.0 +100\.0x$`).MatchString(b.String()) {
		t.Errorf("report lacks the Write p50 ratio row:\n%s", b.String())
	}

	// A skipped serial run: no ratios; a leak makes the runs unclean.
	leaky := conc
	leaky.Leaked = 1
	rep = LoadReport{Sessions: 2, CallsPerSess: 5, Runs: []LoadRun{leaky, {Name: "serial", SerialCalls: true, Skipped: "no key"}}}
	rep.finish()
	if rep.OK || len(rep.Ratios) != 0 || len(rep.Targets) != 4 {
		t.Errorf("leaky run with a skipped serial one: ok %t, %d ratios, %d targets", rep.OK, len(rep.Ratios), len(rep.Targets))
	}
	b.Reset()
	if err := WriteLoadReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"skipped: no key", "1 containers leaked", "runs: NOT clean"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "serial / concurrent") {
		t.Errorf("ratios printed without a serial run:\n%s", b.String())
	}
	// An incomplete journal also makes it unclean.
	bad := conc
	bad.Check.JournalComplete = false
	rep = LoadReport{Runs: []LoadRun{bad}}
	rep.finish()
	if rep.OK {
		t.Error("an incomplete journal reported OK")
	}
}

func TestForeignToken(t *testing.T) {
	for _, tc := range []struct {
		text string
		s    int
		want int
	}{
		{"", 0, -1},
		{"tok-s3-c7", 3, -1},
		{"session 3 line two tok-s3-c1 tok-s3-c9", 3, -1},
		{"tok-s3-c1 then tok-s12-c4", 3, 12},
		{"tok-s1-c0", 11, 1},
		{"tok-sx- tok-s", 0, -1},
	} {
		if got := foreignToken(tc.text, tc.s); got != tc.want {
			t.Errorf("foreignToken(%q, %d) = %d, want %d", tc.text, tc.s, got, tc.want)
		}
	}
}

func TestCheckWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "write-1.txt")
	p := loadPlan{Kind: loadWrite, Tool: "Write", Args: map[string]any{"file_path": path, "content": "tok-s0-c1\n"}}
	if got := checkWritten(p); !strings.Contains(got, "no such file") {
		t.Errorf("missing file: %q", got)
	}
	if err := os.WriteFile(path, []byte("tok-s1-c1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := checkWritten(p); !strings.Contains(got, "want") {
		t.Errorf("other content: %q", got)
	}
	if err := os.WriteFile(path, []byte("tok-s0-c1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := checkWritten(p); got != "" {
		t.Errorf("right content: %q", got)
	}
}
