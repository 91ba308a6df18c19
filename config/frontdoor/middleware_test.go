package frontdoor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// served records what the protected handler saw.
type served struct {
	calls atomic.Int32
	auth  atomic.Value
}

func (s *served) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	s.auth.Store(r.Header.Get("Authorization"))
	io.WriteString(w, "ok")
}

func TestRequire(t *testing.T) {
	k, err := Ensure(KeyPath(t.TempDir(), "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Token()
	const hint = "The token is in the token file; run `agentbox mcp token`."
	const wrong = "WRONG-token-0123456789-0123456789-0123456789"
	var logs bytes.Buffer
	next := &served{}
	h := Require(k, next, WithHint(hint), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	cases := []struct {
		name   string
		header []string
		code   int
	}{
		{"missing", nil, 401},
		{"blank", []string{"Bearer "}, 401},
		{"blank without space", []string{"Bearer"}, 401},
		{"wrong", []string{"Bearer " + wrong}, 401},
		{"prefix of the token", []string{"Bearer " + tok[:20]}, 401},
		{"token with a suffix", []string{"Bearer " + tok + "x"}, 401},
		{"basic scheme", []string{"Basic " + tok}, 401},
		{"token alone", []string{tok}, 401},
		{"two headers", []string{"Bearer " + tok, "Bearer " + wrong}, 401},
		{"valid", []string{"Bearer " + tok}, 200},
		{"valid, scheme in lower case", []string{"bearer " + tok}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := next.calls.Load()
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{}`))
			for _, v := range tc.header {
				req.Header.Add("Authorization", v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			body := rec.Body.String()
			if tc.code == 200 {
				if next.calls.Load() != before+1 {
					t.Error("the handler was not called")
				}
				if a := next.auth.Load(); a != "" {
					t.Error("the handler saw the Authorization header")
				}
				return
			}
			if next.calls.Load() != before {
				t.Error("the protected handler ran for a refused request")
			}
			if c := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(c, `Bearer realm="agentbox"`) {
				t.Errorf("WWW-Authenticate = %q", c)
			}
			if !strings.Contains(body, hint) || !strings.Contains(body, "Authorization: Bearer <token>") {
				t.Errorf("the body does not say how to get in: %q", body)
			}
			if strings.Contains(body, tok) || strings.Contains(body, tok[:20]) || strings.Contains(body, wrong) {
				t.Errorf("the body echoes a token: %q", body)
			}
		})
	}
	if l := logs.String(); strings.Contains(l, tok[:20]) || strings.Contains(l, wrong) {
		t.Errorf("the log holds a token:\n%s", l)
	}
	if n := strings.Count(logs.String(), "refused a request"); n != len(cases)-2 {
		t.Errorf("%d refusals logged, want %d:\n%s", n, len(cases)-2, logs.String())
	}
}

// TestRequireEveryRequestOnOneConnection: a connection that once carried
// the token earns nothing; each request is checked, and a rotation takes
// effect on the next request of a kept-alive connection.
func TestRequireEveryRequestOnOneConnection(t *testing.T) {
	path := KeyPath(t.TempDir(), "mcp")
	k, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Token()
	srv := httptest.NewUnstartedServer(Require(k, &served{}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	do := func(auth string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/mcp", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	steps := []struct {
		auth string
		want int
	}{
		{"Bearer " + tok, 200},
		{"", 401},
		{"Bearer " + tok, 200},
		{"Bearer nope", 401},
	}
	for i, s := range steps {
		if got := do(s.auth); got != s.want {
			t.Fatalf("request %d: status %d, want %d", i, got, s.want)
		}
	}
	if _, err := Rotate(path); err != nil {
		t.Fatal(err)
	}
	if got := do("Bearer " + tok); got != 401 {
		t.Errorf("old token after rotation: %d, want 401", got)
	}
	neu, _ := k.Token()
	if got := do("Bearer " + neu); got != 200 {
		t.Errorf("new token after rotation: %d, want 200", got)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections; the test meant to use one", n)
	}
}

// TestRequireShutWhenKeyUnreadable: a token file turned readable by others
// shuts the door (503) instead of going on with a token that may have
// leaked.
func TestRequireShutWhenKeyUnreadable(t *testing.T) {
	path := KeyPath(t.TempDir(), "mcp")
	k, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Token()
	var logs bytes.Buffer
	h := Require(k, &served{}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
	if !strings.Contains(logs.String(), "cannot check tokens") || strings.Contains(logs.String(), tok) {
		t.Errorf("log:\n%s", logs.String())
	}
}

// BenchmarkRequire is the cost the door adds to a request: header parsing,
// one lstat of the token file, two SHA-256 and a constant-time compare.
func BenchmarkRequire(b *testing.B) {
	k, err := Ensure(KeyPath(b.TempDir(), "mcp"))
	if err != nil {
		b.Fatal(err)
	}
	tok, _ := k.Token()
	h := Require(k, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("POST", "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// TestRequireEndsOpenRequestsOnRotation: a request that stays open (the
// MCP GET event stream, a long tool call's streamed answer) was admitted
// with a token; once that token is rotated away, the request ends within
// a recheck period instead of serving the revoked holder on.
func TestRequireEndsOpenRequestsOnRotation(t *testing.T) {
	path := KeyPath(t.TempDir(), "mcp")
	k, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Token()
	started := make(chan struct{})
	ended := make(chan struct{})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
		close(ended)
	})
	srv := httptest.NewServer(Require(k, stream))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close, which waits for the handler
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	go func() {
		if resp, err := srv.Client().Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	// Not ended while the token holds.
	select {
	case <-ended:
		t.Fatal("the stream ended although its token is still valid")
	case <-time.After(1500 * time.Millisecond):
	}
	if _, err := Rotate(path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a stream admitted with the rotated token is still served 5 s after the rotation")
	}
}
