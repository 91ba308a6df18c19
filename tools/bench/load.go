package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/engine"
	"github.com/agentbox/agentbox/snapshot"
	"github.com/agentbox/agentbox/tools/audit"
	"github.com/agentbox/agentbox/tools/workspace"
)

// serialCallsKey is the configuration key that forces the old serial
// behaviour (a whole-workspace shell call holds the store lock for its
// whole run); serialCallsEnv sets it for the server the bench starts.
const (
	serialCallsKey = "snapshot.serial_calls"
	serialCallsEnv = "AGENTBOX_SNAPSHOT_SERIAL_CALLS"
)

// LoadOptions are the knobs of [Load].
type LoadOptions struct {
	// Sessions is the concurrent MCP sessions; Calls the calls of each.
	Sessions, Calls int
	// Slow is the duration of the slow shell one session in four runs
	// once every 10 calls (0: none).
	Slow time.Duration
	// Concurrent runs the load with snapshot.serial_calls false; Serial
	// with it true (after the concurrent run, for the ratios).
	Concurrent, Serial bool
}

// Load starts `exe mcp --http` (an agentbox binary) on a temporary
// workspace owned by an unprivileged uid, with its own configuration and
// state dir (the rest of its environment is this process's AGENTBOX_*),
// and drives it with Sessions MCP clients (the official Go SDK over
// streamable HTTP) of Calls mixed calls each, once per mode asked for. Each
// run reports latency per kind of call, calls/s, containers the engine
// created for the workspace and those left after the server stopped, and
// whether the journal and the audit log read back hold every call. The
// engine is cfg's, which must answer. An error means the load could not be
// run; a failed call or an incomplete record makes the report not OK.
func Load(ctx context.Context, progress io.Writer, cfg *config.Config, exe string, o LoadOptions) (LoadReport, error) {
	rep := LoadReport{Sessions: o.Sessions, CallsPerSess: o.Calls, SlowS: o.Slow.Seconds(), SlowSessions: []int{}}
	if o.Sessions < 1 || o.Calls < 1 {
		return rep, fmt.Errorf("sessions and calls must be at least 1")
	}
	cli, info, err := engine.Connect(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer cli.Close()
	fmt.Fprintf(progress, "engine %s (%s); server %s mcp --http\n", info.Host, info.Version, exe)
	for s := range o.Sessions {
		if loadSlowSession(s) {
			rep.SlowSessions = append(rep.SlowSessions, s)
		}
	}
	_, serialKnown := config.KnownKeys()[serialCallsKey]
	for _, serial := range []bool{false, true} {
		if (serial && !o.Serial) || (!serial && !o.Concurrent) {
			continue
		}
		name := "concurrent"
		if serial {
			name = "serial"
		}
		if serial && !serialKnown {
			reason := "this build has no " + serialCallsKey + " configuration key, so the old serial behaviour cannot be forced"
			fmt.Fprintf(progress, "%s run: skipped: %s\n", name, reason)
			rep.Runs = append(rep.Runs, LoadRun{Name: name, SerialCalls: true, Skipped: reason})
			continue
		}
		fmt.Fprintf(progress, "%s run (%s=%t): %d sessions × %d calls ...\n", name, serialCallsKey, serial, o.Sessions, o.Calls)
		r, err := runLoad(ctx, progress, cli, exe, o, serial, serialKnown)
		if err != nil {
			return rep, fmt.Errorf("%s run: %w", name, err)
		}
		r.Name = name
		rep.Runs = append(rep.Runs, r)
	}
	rep.finish()
	return rep, nil
}

// loadServerConfig is the configuration of the server under load.
const loadServerConfig = `tools:
  mode: acceptEdits
  allow:
    - "Bash(echo:*)"
    - "Bash(sleep:*)"
mcp:
  non_interactive: deny
`

// runLoad runs the load once against a fresh workspace and server.
// setSerial says whether the configuration knows serialCallsKey (then
// the server gets it explicitly, true or false).
func runLoad(ctx context.Context, progress io.Writer, cli *client.Client, exe string, o LoadOptions, serial, setSerial bool) (LoadRun, error) {
	run := LoadRun{SerialCalls: serial}
	dir, remove, err := tempDir("agentbox-bench-load-")
	if err != nil {
		return run, err
	}
	defer remove()
	ws, state, cfgFile := filepath.Join(dir, "ws"), filepath.Join(dir, "state"), filepath.Join(dir, "config.yaml")
	label := fmt.Sprintf("# agentbox bench load: %s run\n", map[bool]string{false: "concurrent", true: "serial"}[serial])
	if setSerial {
		label += fmt.Sprintf("# %s=%t comes from %s\n", serialCallsKey, serial, serialCallsEnv)
	}
	if err := os.WriteFile(cfgFile, []byte(label+loadServerConfig), 0o600); err != nil {
		return run, err
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		return run, err
	}
	if err := giveToOwner(ws); err != nil {
		return run, err
	}
	for s := range o.Sessions {
		d := filepath.Join(ws, fmt.Sprintf("s%d", s))
		notes := filepath.Join(d, "notes.txt")
		if err := os.Mkdir(d, 0o755); err != nil {
			return run, err
		}
		if err := os.WriteFile(notes, fmt.Appendf(nil, "session %d line one\nsession %d line two\n", s, s), 0o644); err != nil {
			return run, err
		}
		for _, p := range []string{d, notes} {
			if err := giveToOwner(p); err != nil {
				return run, err
			}
		}
	}

	// Count the containers the engine creates for this workspace.
	ectx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	var created atomic.Int64
	msgs, errs := cli.Events(ectx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("event", string(events.ActionCreate)),
		filters.Arg("label", docker.LabelWorkspace+"="+ws))})
	eventsDone := make(chan error, 1)
	go func() {
		for {
			select {
			case _, ok := <-msgs:
				if !ok {
					eventsDone <- nil
					return
				}
				created.Add(1)
			case err := <-errs:
				if ectx.Err() != nil {
					err = nil
				}
				eventsDone <- err
				return
			}
		}
	}()

	srv, err := startLoadServer(ctx, exe, ws, state, cfgFile, serial, setSerial)
	if err != nil {
		return run, err
	}
	defer srv.stop()

	// Connect every session; each reads its file once (Edit needs it)
	// and runs one shell, so the pool is warm before the clock starts.
	type sess struct {
		cs    *sdk.ClientSession
		plan  []loadPlan
		calls []loadCall
	}
	sessions := make([]*sess, o.Sessions)
	for s := range sessions {
		cs, err := srv.connect(ctx, s)
		if err != nil {
			return run, fmt.Errorf("session %d: %w", s, err)
		}
		defer cs.Close()
		sessions[s] = &sess{cs: cs, plan: loadMix(ws, s, o.Calls, o.Slow, loadSlowSession(s))}
	}
	for s, se := range sessions {
		warm := []loadPlan{se.plan[0], {Kind: loadBashRO, Tool: "Bash", Args: map[string]any{"command": "echo warm"}, Want: "warm"}}
		for _, p := range warm {
			c := loadCallOnce(ctx, se.cs, s, p)
			if c.Err != "" {
				return run, fmt.Errorf("warm-up: session %d %s: %s\nserver log:\n%s", s, p.Kind, c.Err, srv.logTail())
			}
			se.calls = append(se.calls, c)
		}
	}
	time.Sleep(time.Second) // the pool refills

	fmt.Fprintf(progress, "  %d sessions started\n", len(sessions))
	created0 := created.Load()
	start := time.Now()
	var wg sync.WaitGroup
	var done atomic.Int64
	for s, se := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range se.plan {
				c := loadCallOnce(ctx, se.cs, s, p)
				c.Timed = true
				se.calls = append(se.calls, c)
				done.Add(1)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(15 * time.Second)
	for running := true; running; {
		select {
		case <-tick.C:
			fmt.Fprintf(progress, "  %d/%d calls in %.0fs\n", done.Load(), o.Sessions*o.Calls, time.Since(start).Seconds())
		case <-finished:
			running = false
		}
	}
	tick.Stop()
	wall := time.Since(start)
	// Creates reach us a moment after they happen.
	time.Sleep(200 * time.Millisecond)
	run.Containers = int(created.Load() - created0)
	for _, se := range sessions {
		se.cs.Close()
	}
	if err := srv.stop(); err != nil {
		fmt.Fprintf(progress, "  stopping the server: %v\n", err)
	}
	stopEvents()
	if err := <-eventsDone; err != nil {
		fmt.Fprintf(progress, "  engine events: %v (containers/s undercounted)\n", err)
	}

	// Leaked: containers of the workspace still there once the server has
	// stopped (removal of the last ones may take a moment).
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelWorkspace+"="+ws))})
		if err != nil {
			return run, err
		}
		run.Leaked = len(left)
		if run.Leaked == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}

	var all []loadCall
	for _, se := range sessions {
		all = append(all, se.calls...)
	}
	for _, c := range all {
		if !c.Timed {
			continue
		}
		run.Calls++
		if c.Err != "" {
			run.Errors++
			if len(run.FirstErrors) < loadMaxProblems {
				run.FirstErrors = append(run.FirstErrors, fmt.Sprintf("session %d %s: %s", c.Session, c.Kind, c.Err))
			}
		}
	}
	run.WallS = wall.Seconds()
	run.CallsPerS = float64(run.Calls) / wall.Seconds()
	run.ContainersPerS = float64(run.Containers) / wall.Seconds()
	run.Tools = loadStats(all)

	recs, entries, err := readLoadRecords(ctx, ws, state)
	if err != nil {
		return run, err
	}
	run.Check = checkLoad(all, recs, entries)
	return run, nil
}

// loadCallTimeout bounds one call: a call that hangs fails, the run goes on.
const loadCallTimeout = 5 * time.Minute

// loadCallOnce makes one call and checks its result.
func loadCallOnce(ctx context.Context, cs *sdk.ClientSession, s int, p loadPlan) loadCall {
	c := loadCall{Session: s, Kind: p.Kind, Tool: p.Tool, Path: p.Path}
	ctx, cancel := context.WithTimeout(ctx, loadCallTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: p.Tool, Arguments: p.Args})
	c.D = time.Since(t0)
	if err != nil {
		c.Err = err.Error()
		return c
	}
	if meta, ok := res.Meta["agentbox"].(map[string]any); ok {
		c.SessionID, _ = meta["session"].(string)
		c.CallID, _ = meta["call_id"].(string)
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	switch {
	case res.IsError:
		c.Err = "error result: " + firstLine(text.String())
	case p.Kind == loadRead && strings.Contains(text.String(), "unchanged since your last read"):
		// The re-read stub.
	case p.Want != "" && !strings.Contains(text.String(), p.Want):
		c.Err = fmt.Sprintf("result %q lacks %q", firstLine(text.String()), p.Want)
	case foreignToken(text.String(), s) >= 0:
		c.Err = fmt.Sprintf("result carries session %d's token: mixed up with another session's call", foreignToken(text.String(), s))
	case p.Kind == loadWrite:
		c.Err = checkWritten(p)
	}
	return c
}

// foreignToken is the session of the first load token ("tok-sN-") in text
// that is not session s's, or -1: a session's results never carry
// another session's tokens.
func foreignToken(text string, s int) int {
	for rest := text; ; {
		i := strings.Index(rest, "tok-s")
		if i < 0 {
			return -1
		}
		rest = rest[i+len("tok-s"):]
		digits, _, ok := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(digits); ok && err == nil && n != s {
			return n
		}
	}
}

// checkWritten says what is wrong with a Write's file ("" when it holds
// the content written: its path is the call's alone).
func checkWritten(p loadPlan) string {
	path, _ := p.Args["file_path"].(string)
	want, _ := p.Args["content"].(string)
	b, err := os.ReadFile(path)
	switch {
	case err != nil:
		return "the written file: " + err.Error()
	case string(b) != want:
		return fmt.Sprintf("the written file holds %q, want %q", firstLine(string(b)), firstLine(want))
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// readLoadRecords reads the audit log and the journal the server left.
func readLoadRecords(ctx context.Context, ws, state string) ([]audit.Record, []snapshot.Entry, error) {
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = ws, state
	log, err := audit.Open(workspace.AuditPath(&cfg))
	if err != nil {
		return nil, nil, err
	}
	recs, err := log.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the audit log: %w", err)
	}
	if _, err := log.Verify(); err != nil {
		return nil, nil, fmt.Errorf("audit log: %w", err)
	}
	st, err := snapshot.Open(ctx, cfg.WorkspaceStateDir(), ws)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the journal: %w", err)
	}
	defer st.Close()
	entries, err := st.List(ctx, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the journal: %w", err)
	}
	return recs, entries, nil
}

// loadServer is an `agentbox mcp --http` under load.
type loadServer struct {
	cmd      *exec.Cmd
	addr     string
	token    string
	logs     *lockedBuffer
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
}

func startLoadServer(ctx context.Context, exe, ws, state, cfgFile string, serial, setSerial bool) (*loadServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	tok := make([]byte, 16)
	rand.Read(tok)
	s := &loadServer{addr: addr, token: hex.EncodeToString(tok), logs: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(exe, "--workspace", ws, "--state-dir", state, "--config", cfgFile, "mcp", "--http", addr)
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AGENTBOX_MCP_BEARER_TOKEN", "AGENTBOX_MCP_HTTP_ADDR", "AGENTBOX_WORKSPACE", "AGENTBOX_STATE_DIR", "AGENTBOX_TOOLS_MODE", serialCallsEnv:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AGENTBOX_MCP_BEARER_TOKEN="+s.token)
	if setSerial {
		env = append(env, fmt.Sprintf("%s=%t", serialCallsEnv, serial))
	}
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("agentbox mcp --http exited: %s", s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("agentbox mcp --http %s never listened: %s", addr, s.logTail())
		}
	}
}

// connect opens MCP session s over streamable HTTP.
func (s *loadServer) connect(ctx context.Context, n int) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: fmt.Sprintf("bench-load-%d", n), Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: s.token, base: http.DefaultTransport}}}
	return c.Connect(ctx, tr, nil)
}

// stop interrupts the server and waits for it to exit (it removes its
// pool first); after a minute it is killed.
func (s *loadServer) stop() error {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			s.cmd.Process.Kill()
			<-s.done
			s.stopErr = errors.New("the server did not exit within a minute of SIGINT: killed")
		}
	})
	return s.stopErr
}

// logTail is the end of the server's output.
func (s *loadServer) logTail() string {
	b := s.logs.String()
	if len(b) > 4000 {
		b = "..." + b[len(b)-4000:]
	}
	return b
}

// bearerTransport adds the bearer token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
