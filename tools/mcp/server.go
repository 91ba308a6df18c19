package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/tools"
)

// Call is one tools/call as the adapter hands it to the tool pipeline.
type Call struct {
	// Tool is the name the client called.
	Tool string
	// Input is the raw JSON arguments object ("{}" when the client sent
	// none).
	Input json.RawMessage
	// Session is the MCP session's own tools session: cwd, read tracker,
	// grants and background jobs.
	Session *tools.Session
	// Approver asks this session's human (elicitation, the approval
	// terminal) or applies the non-interactive decision. It is the only
	// way a call of this session reaches a person: CallFunc passes it on
	// (tools.Request.Approver).
	Approver tools.Approver
	// Progress, when non-nil, receives the call's output as it streams.
	Progress func(tools.Chunk)
}

// CallFunc runs one call through the whole tool pipeline (decode, rules,
// approval, snapshot, sandbox, journal, audit) and returns its result. The
// ctx is cancelled when the client cancels the request; the pipeline must
// then stop the call (kill its container).
type CallFunc func(ctx context.Context, call Call) tools.Result

// SessionHooks create and dispose of the tools session behind each MCP
// session.
type SessionHooks struct {
	// Open returns the tools session for a new MCP session id. Nil:
	// tools.NewSession(id, workspace).
	Open func(ctx context.Context, id string) (*tools.Session, error)
	// Close is called once when the MCP session ends: stop its background
	// jobs. May be nil.
	Close func(ctx context.Context, s *tools.Session)
}

// Options configure a Server.
type Options struct {
	// Name and Version are reported to clients.
	Name, Version string
	// Workspace is the workspace's real path (the default cwd of sessions).
	Workspace string
	// Tools are the registry's tools in its stable order.
	Tools []tools.Tool
	// Call runs a call through the pipeline. Required.
	Call CallFunc
	// Sessions create and dispose of per-session state.
	Sessions SessionHooks
	// Elicit asks people through MCP elicitation when the client can.
	Elicit bool
	// AllowNonInteractive is the decision when nobody can be asked
	// (false: deny).
	AllowNonInteractive bool
	// ApprovalTTY, when set, asks on that terminal when a client cannot
	// elicit (mcp.approval_tty).
	ApprovalTTY *TTYChannel
	// ApprovalTimeout bounds one elicitation (default 5m).
	ApprovalTimeout time.Duration
	// ProgressInterval is the period of progress notifications for a call
	// whose client asked for progress (default 1s).
	ProgressInterval time.Duration
	// MaxInputBytes is the tool input cap (tools.max_input_bytes). Over
	// stdio, a request line may be that plus 1 MiB; a longer one is refused
	// with a JSON-RPC error and the session goes on. 0: no limit.
	MaxInputBytes int
	// Instructions are shown to the client at initialization.
	Instructions string
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

// Server serves the tools to MCP clients. Each MCP session gets its own
// tools.Session (cwd, read tracker, grants, background jobs) and its own
// Approver. Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	srv  *sdk.Server

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
	byID     map[string]*session
}

type session struct {
	id       string
	tools    *tools.Session
	approver *Approver
	once     sync.Once
}

// ProtocolVersions are the MCP protocol versions agentbox negotiates. The
// 2026-07-28 protocol is left out on purpose: it is sessionless and forbids
// the mid-call elicitation that approvals rely on, while agentbox keeps
// per-session state (cwd, read tracker, grants, background jobs).
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// NewServer builds the MCP server for opts.Tools.
func NewServer(opts Options) (*Server, error) {
	if opts.Call == nil {
		return nil, fmt.Errorf("mcp: Options.Call is required")
	}
	if opts.Name == "" {
		opts.Name = "agentbox"
	}
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = 5 * time.Minute
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{opts: opts, log: log, sessions: map[*sdk.ServerSession]*session{}, byID: map[string]*session{}}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: opts.Name, Title: "agentbox", Version: opts.Version}, &sdk.ServerOptions{
		Instructions:              opts.Instructions,
		Logger:                    opts.Logger,
		InitializedHandler:        s.initialized,
		SupportedProtocolVersions: ProtocolVersions,
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, t := range opts.Tools {
		decl, err := Declaration(t)
		if err != nil {
			return nil, err
		}
		s.srv.AddTool(decl, s.handler(t.Name()))
	}
	return s, nil
}

// SDK returns the underlying go-sdk server (to run it on a transport).
func (s *Server) SDK() *sdk.Server { return s.srv }

// ServeStdio serves one session over stdin/stdout until the client
// disconnects or ctx is done, then stops the session's background jobs.
// When the input ends, the requests already read are answered first.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.serveIO(ctx, os.Stdin, os.Stdout)
}

func (s *Server) serveIO(ctx context.Context, in io.Reader, out io.Writer) error {
	d := newDrainingStdio(ctx, in, out, maxLine(s.opts.MaxInputBytes))
	// The lines are bounded above (go-sdk's own bound, 16 MiB, is below
	// tools.max_input_bytes and would end the session).
	err := s.srv.Run(ctx, &sdk.IOTransport{Reader: d, Writer: d.writer(), MaxLineLength: -1})
	s.closeAll()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// HTTPHandler serves streamable HTTP (many sessions), refusing
// cross-origin browser requests. idle closes sessions without requests
// for that long (0: never). It does not authenticate: serve it only
// behind frontdoor.Require or on a frontdoor.Listener.
func (s *Server) HTTPHandler(idle time.Duration) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: idle})
	return http.NewCrossOriginProtection().Handler(h)
}

// Close stops every session's background jobs.
func (s *Server) Close() { s.closeAll() }

func (s *Server) initialized(ctx context.Context, req *sdk.InitializedRequest) {
	ss := req.Session
	if _, err := s.session(ctx, ss); err != nil {
		s.log.Warn("opening session", "err", err)
		return
	}
	go func() {
		_ = ss.Wait()
		s.closeSession(ss)
	}()
}

// session returns (creating on first use) the state of an MCP session.
func (s *Server) session(ctx context.Context, ss *sdk.ServerSession) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.sessions[ss]; ok {
		return st, nil
	}
	id := ss.ID()
	if id == "" {
		id = newSessionID()
	} else {
		id = "mcp-" + id
	}
	var ts *tools.Session
	if s.opts.Sessions.Open != nil {
		var err error
		if ts, err = s.opts.Sessions.Open(ctx, id); err != nil {
			return nil, err
		}
	} else {
		ts = tools.NewSession(id, s.opts.Workspace)
	}
	st := &session{id: id, tools: ts,
		approver: newApprover(ss, s.opts.Elicit, s.opts.AllowNonInteractive, s.opts.ApprovalTimeout).WithTTY(s.opts.ApprovalTTY)}
	s.sessions[ss] = st
	s.byID[id] = st
	s.log.Info("session opened", "session", id)
	return st, nil
}

func (s *Server) closeSession(ss *sdk.ServerSession) {
	s.mu.Lock()
	st, ok := s.sessions[ss]
	delete(s.sessions, ss)
	if ok {
		delete(s.byID, st.id)
	}
	s.mu.Unlock()
	if ok {
		s.dispose(st)
	}
}

func (s *Server) closeAll() {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for ss, st := range s.sessions {
		all = append(all, st)
		delete(s.sessions, ss)
		delete(s.byID, st.id)
	}
	s.mu.Unlock()
	for _, st := range all {
		s.dispose(st)
	}
}

func (s *Server) dispose(st *session) {
	st.once.Do(func() {
		if s.opts.Sessions.Close != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s.opts.Sessions.Close(ctx, st.tools)
		}
		s.log.Info("session closed", "session", st.id)
	})
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}

// handler runs calls of one tool.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		st, err := s.session(ctx, req.Session)
		if err != nil {
			return nil, fmt.Errorf("opening session: %w", err)
		}
		input := json.RawMessage(req.Params.Arguments)
		if len(input) == 0 || string(input) == "null" {
			input = json.RawMessage("{}")
		}
		call := Call{Tool: name, Input: input, Session: st.tools, Approver: st.approver}
		var prog *progress
		if tok := req.Params.GetProgressToken(); tok != nil {
			prog = newProgress(req.Session, tok, s.opts.ProgressInterval)
			call.Progress = prog.add
			stop := prog.start(ctx)
			defer stop()
		}
		res := s.opts.Call(ctx, call)
		out := toResult(res)
		out.Meta["agentbox"].(map[string]any)["session"] = st.id
		return out, nil
	}
}

// toResult converts a pipeline Result into MCP content: the model-facing
// text, any images, IsError, and the machine-readable facts under
// _meta.agentbox.
func toResult(r tools.Result) *sdk.CallToolResult {
	text := r.Content
	if text == "" && r.Err != nil {
		text = r.Err.Message
	}
	out := &sdk.CallToolResult{IsError: r.IsError()}
	if text != "" || len(r.Images) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: text})
	}
	for _, img := range r.Images {
		out.Content = append(out.Content, &sdk.ImageContent{Data: img.Data, MIMEType: img.MIMEType})
	}
	meta := map[string]any{"display": r.Display}
	if r.Err != nil {
		meta["error"] = r.Err
	}
	for k, v := range r.Meta {
		meta[k] = v
	}
	out.Meta = sdk.Meta{"agentbox": meta}
	return out
}

// progress turns streamed output into progress notifications: one per
// interval while the call runs, carrying the newest output lines.
type progress struct {
	ss       *sdk.ServerSession
	token    any
	interval time.Duration

	mu    sync.Mutex
	buf   []byte // output since the last notification
	total int64  // bytes seen
	ticks int
}

func newProgress(ss *sdk.ServerSession, token any, interval time.Duration) *progress {
	return &progress{ss: ss, token: token, interval: interval}
}

func (p *progress) add(c tools.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += int64(len(c.Data))
	p.buf = append(p.buf, c.Data...)
	const keep = 4096
	if len(p.buf) > 2*keep {
		p.buf = append(p.buf[:0], p.buf[len(p.buf)-keep:]...)
	}
}

// start sends notifications until the returned stop is called.
func (p *progress) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.notify(ctx, time.Since(began))
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (p *progress) notify(ctx context.Context, elapsed time.Duration) {
	p.mu.Lock()
	p.ticks++
	out := tail(p.buf, 1024)
	p.buf = p.buf[:0]
	// Progress must increase: count ticks, plus bytes as a fraction.
	val := float64(p.ticks)
	total := p.total
	p.mu.Unlock()
	msg := fmt.Sprintf("running for %s, %d bytes of output", elapsed.Round(time.Second), total)
	if out != "" {
		msg += "\n" + out
	}
	_ = p.ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: val, Message: msg})
}

// tail returns at most n bytes from the end of b, starting at a line
// boundary when one is near, as valid UTF-8.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < n/2 {
			b = b[i+1:]
		}
	}
	s := strings.TrimRight(string(b), "\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "�")
	}
	return s
}
