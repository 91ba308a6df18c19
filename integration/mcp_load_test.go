//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPLoad: 8 concurrent MCP sessions × 100 mixed calls against one
// `agentbox mcp --http`. Every result must belong to its own call (each
// carries a unique token), no container may leak, and the journal and the
// audit log must hold every call with its session. Prints throughput and
// p50/p95 latency per tool.
func TestMCPLoad(t *testing.T) {
	const sessions, calls = 8, 100
	e := newMCPEnv(t, "")
	for s := 0; s < sessions; s++ {
		e.writeFile(t, fmt.Sprintf("s%d/notes.txt", s), []byte(fmt.Sprintf("session %d line one\nsession %d line two\n", s, s)))
	}
	addr := freeAddr(t)
	const token = "load-token-0123456789abcdef"
	stopServer := startHTTP(t, e, addr, token)

	type sample struct {
		tool string
		d    time.Duration
	}
	var (
		mu       sync.Mutex
		samples  []sample
		failures []string
		mutating = map[string]int{} // session id → mutating calls that changed something
		ids      = map[string]bool{}
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			c := sdk.NewClient(&sdk.Implementation{Name: fmt.Sprintf("load-%d", s), Version: "1"}, nil)
			tr := &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}
			cs, err := c.Connect(ctx, tr, nil)
			if err != nil {
				fail("session %d: connect: %v", s, err)
				return
			}
			defer cs.Close()
			rng := rand.New(rand.NewPCG(uint64(s), 42))
			dir := filepath.Join(e.ws, fmt.Sprintf("s%d", s))
			notes := filepath.Join(dir, "notes.txt")
			readOnce := false
			var sessionID string
			for i := 0; i < calls; i++ {
				tok := fmt.Sprintf("tok-s%d-c%d", s, i)
				var name string
				var args map[string]any
				var want string
				changes := false
				switch k := rng.IntN(20); {
				case k < 6 || !readOnce:
					name, args, want = "Read", map[string]any{"file_path": notes}, fmt.Sprintf("session %d line", s)
				case k < 8:
					name, args, want = "Grep", map[string]any{"pattern": fmt.Sprintf("session %d", s), "path": dir, "output_mode": "files_with_matches"}, "notes.txt"
				case k < 10:
					name, args, want = "Glob", map[string]any{"pattern": "*.txt", "path": dir}, "notes.txt"
				case k < 11:
					name, args, want = "LS", map[string]any{"path": dir}, "notes.txt"
				case k < 14:
					name, args, want = "Bash", map[string]any{"command": "echo " + tok}, tok
				case k < 17:
					name, args, want = "Write", map[string]any{"file_path": filepath.Join(dir, fmt.Sprintf("out-%d.txt", i)), "content": tok + "\n"}, ""
					changes = true
				default:
					// Appends to line two; the old text stays unique for the next Edit.
					old := fmt.Sprintf("session %d line two", s)
					name, args, want = "Edit", map[string]any{"file_path": notes, "old_string": old, "new_string": old + " " + tok}, ""
					changes = true
				}
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
				d := time.Since(t0)
				mu.Lock()
				samples = append(samples, sample{name, d})
				mu.Unlock()
				if err != nil {
					fail("session %d call %d %s: %v", s, i, name, err)
					continue
				}
				text := ""
				for _, c := range res.Content {
					if tc, ok := c.(*sdk.TextContent); ok {
						text += tc.Text
					}
				}
				if res.IsError {
					fail("session %d call %d %s: error: %s", s, i, name, text)
					continue
				}
				if name == "Read" && strings.Contains(text, "unchanged since your last read") && strings.Contains(text, notes) {
					want = "" // the re-read stub, for this session's own file
				}
				if want != "" && !strings.Contains(text, want) {
					fail("session %d call %d %s: result %q lacks %q (mixed up?)", s, i, name, text, want)
				}
				for o := 0; o < sessions; o++ {
					if o != s && strings.Contains(text, fmt.Sprintf("tok-s%d-", o)) {
						fail("session %d call %d %s: result carries session %d's token", s, i, name, o)
					}
				}
				if name == "Read" {
					readOnce = true
				}
				meta, _ := res.Meta["agentbox"].(map[string]any)
				if sid, _ := meta["session"].(string); sid != "" {
					sessionID = sid
				}
				if id, _ := meta["call_id"].(string); id != "" {
					mu.Lock()
					if ids[id] {
						failures = append(failures, "duplicate call id "+id)
					}
					ids[id] = true
					mu.Unlock()
				}
				if changes {
					mu.Lock()
					mutating[fmt.Sprint(s)]++
					mu.Unlock()
				}
				if name == "Write" {
					b, err := os.ReadFile(args["file_path"].(string))
					if err != nil || string(b) != tok+"\n" {
						fail("session %d call %d: Write left %q (%v)", s, i, b, err)
					}
				}
			}
			_ = sessionID
		}(s)
	}
	wg.Wait()
	wall := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}
	if len(samples) != sessions*calls {
		t.Errorf("%d results for %d calls", len(samples), sessions*calls)
	}

	// Report: throughput and latency per tool.
	byTool := map[string][]time.Duration{}
	for _, s := range samples {
		byTool[s.tool] = append(byTool[s.tool], s.d)
	}
	var names []string
	for n := range byTool {
		names = append(names, n)
	}
	sort.Strings(names)
	report := fmt.Sprintf("MCP load: %d sessions × %d calls = %d calls in %s: %.1f calls/s\n", sessions, calls, len(samples), wall.Round(time.Millisecond), float64(len(samples))/wall.Seconds())
	report += fmt.Sprintf("%-10s %6s %9s %9s %9s\n", "tool", "calls", "p50", "p95", "max")
	for _, n := range names {
		ds := byTool[n]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		pct := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))] }
		report += fmt.Sprintf("%-10s %6d %9s %9s %9s\n", n, len(ds), pct(0.50).Round(100*time.Microsecond), pct(0.95).Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond))
	}
	fmt.Print(report)
	t.Log("\n" + report)

	// Journal: every call that changed something is there, by session.
	out, code := e.agentboxCLI(t, "history", "--json")
	if code != 0 {
		t.Fatalf("history: %d %s", code, out)
	}
	var hist []struct {
		Session string `json:"session"`
		Tool    string `json:"tool"`
		Changes []any  `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("history --json: %v", err)
	}
	perSession := map[string]int{}
	for _, h := range hist {
		if (h.Tool == "Write" || h.Tool == "Edit") && len(h.Changes) > 0 {
			perSession[h.Session]++
		}
	}
	total := 0
	for _, n := range mutating {
		total += n
	}
	got := 0
	for sid, n := range perSession {
		if !strings.HasPrefix(sid, "mcp-") {
			t.Errorf("journal entry of session %q: not an MCP session id", sid)
		}
		got += n
	}
	if got != total || len(perSession) != sessions {
		t.Errorf("journal: %d Write/Edit entries in %d sessions, want %d in %d", got, len(perSession), total, sessions)
	}
	// Audit: one record per call, chain intact.
	out, code = e.agentboxCLI(t, "audit", "verify")
	if code != 0 {
		t.Errorf("audit verify: %d %s", code, out)
	}
	if !strings.Contains(out, fmt.Sprint(sessions*calls)) {
		t.Errorf("audit verify does not count %d records: %s", sessions*calls, out)
	}
	stopServer()
	waitNoContainers(t, e.ws, 60*time.Second)
}

// bearer adds the bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
