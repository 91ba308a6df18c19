package initproc

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/egress"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func proxyClient(port int) *http.Client {
	pu, _ := url.Parse("http://127.0.0.1:" + itoa(port))
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestEgressNoNetworkFailsFast(t *testing.T) {
	port := freePort(t)
	var notes atomic.Int32
	var text atomic.Value
	stop := startEgress(EgressReq{Port: port}, func(s string) { notes.Add(1); text.Store(s) })
	defer stop()
	for _, u := range []string{"http://example.invalid/", "https://example.invalid/"} {
		start := time.Now()
		resp, err := proxyClient(port).Get(u)
		if strings.HasPrefix(u, "https") {
			// CONNECT refused: the client reports the proxy's status.
			if err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Fatalf("%s: %v", u, err)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 || resp.Header.Get("X-Agentbox-Error") != egress.ReasonNoNetwork || !strings.Contains(string(b), "network.mode") {
				t.Fatalf("%d %q %q", resp.StatusCode, resp.Header.Get("X-Agentbox-Error"), b)
			}
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%s took %s", u, d)
		}
	}
	if notes.Load() != 1 || !strings.Contains(text.Load().(string), "no network") {
		t.Fatalf("notes %d %v", notes.Load(), text.Load())
	}
}

func TestEgressRelaysToTheProxy(t *testing.T) {
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.Host) })}
	bln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	go backend.Serve(bln)
	defer backend.Close()
	p, _ := egress.NewPolicy([]string{"127.0.0.2"}, nil)
	auth, token, _ := egress.NewToken()
	got := make(chan egress.Event, 4)
	srv := egress.NewServer(egress.NewGate(p), auth, egress.WithAudit(func(ev egress.Event) { got <- ev }))
	ln, err := egress.Listen(t.TempDir() + "/e")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	port := freePort(t)
	var notes []string
	stop := startEgress(EgressReq{Port: port, Socket: ln.Addr().String(), Token: token, Call: "c7", Session: "s7"}, func(s string) { notes = append(notes, s) })
	resp, err := proxyClient(port).Get("http://" + bln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "hello 127.0.0.2:") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if ev := <-got; ev.Call != "c7" || ev.Session != "s7" || ev.Decision != "allow" {
		t.Fatalf("audit %+v", ev)
	}
	// A refusal reaches the client whole and is repeated once on the
	// command's stderr.
	for range 2 {
		resp, err = proxyClient(port).Get("http://not-listed.example:80/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("X-Agentbox-Error") != egress.ReasonNotAllowed || !strings.Contains(string(b), "network.allow") {
			t.Fatalf("refusal: %d %q %q", resp.StatusCode, resp.Header, b)
		}
		<-got
	}
	stop()
	if len(notes) != 1 || !strings.Contains(notes[0], "not-allowed") {
		t.Fatalf("notes %q", notes)
	}
	// Stopped: nothing listens any more.
	if _, err := net.Dial("tcp", "127.0.0.1:"+itoa(port)); err == nil {
		t.Fatal("listener still open after stop")
	}
}
