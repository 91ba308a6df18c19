package docker

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReaperArgs(t *testing.T) {
	id := strings.Repeat("0a", 16)
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", id}, true},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock"}, false},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", id, "x"}, false},
		{[]string{"agentbox-reaper", "", id}, false},
		{[]string{"agentbox-reaper", "tcp://192.0.2.1:2375", id}, false},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", ""}, false},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", strings.ToUpper(id)}, false},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", id[:31]}, false},
		{[]string{"agentbox-reaper", "unix:///run/docker.sock", id[:31] + "="}, false},
	} {
		host, gotID, err := reaperArgs(c.args)
		if (err == nil) != c.ok {
			t.Errorf("reaperArgs(%q): err %v, want ok %v", c.args, err, c.ok)
		}
		if err == nil && (host != c.args[1] || gotID != c.args[2]) {
			t.Errorf("reaperArgs(%q) = %q %q", c.args, host, gotID)
		}
	}
}

// TestReaperUnreachableEngine: a reaper that cannot reach the engine
// fails startReaper (New then fails closed) and is gone.
func TestReaperUnreachableEngine(t *testing.T) {
	rp, err := startReaper("unix://"+filepath.Join(t.TempDir(), "none.sock"), strings.Repeat("ab", 16))
	if err == nil {
		rp.stop(context.Background(), true)
		t.Fatal("started against a missing engine")
	}
}

// fakeEngine serves the few Engine API calls the reaper makes and records
// kills and removals.
type fakeEngine struct {
	mu      sync.Mutex
	list    []map[string]any
	touched []string
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if i := strings.Index(p[1:], "/"); strings.HasPrefix(p, "/v1.") && i > 0 {
		p = p[i+1:]
	}
	w.Header().Set("Api-Version", "1.41")
	switch {
	case p == "/_ping":
		w.Write([]byte("OK"))
	case p == "/containers/json":
		json.NewEncoder(w).Encode(f.list)
	case strings.HasPrefix(p, "/containers/"):
		f.mu.Lock()
		f.touched = append(f.touched, r.Method+" "+strings.TrimPrefix(p, "/containers/"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeEngine) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.touched...)
}

// TestReaperSweepsOnExecutorDeath: when the pipe closes without the
// clean-close byte the reaper kills and removes its executor's containers
// and none of another executor's (even if the engine's filter let them
// through), then exits.
func TestReaperSweepsOnExecutorDeath(t *testing.T) {
	id, other := strings.Repeat("01", 16), strings.Repeat("02", 16)
	f := &fakeEngine{list: []map[string]any{
		{"Id": "mine", "Labels": map[string]string{LabelExecutor: id}},
		{"Id": "theirs", "Labels": map[string]string{LabelExecutor: other}},
	}}
	sock := filepath.Join(t.TempDir(), "e.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	defer srv.Close()
	rp, err := startReaper("unix://"+sock, id)
	if err != nil {
		t.Fatal(err)
	}
	if g := f.got(); len(g) != 0 {
		t.Fatalf("touched containers before the executor died: %q", g)
	}
	rp.pipe.Close() // as the kernel does when the executor dies
	select {
	case <-rp.done:
	case <-time.After(time.Minute):
		t.Fatal("the reaper did not exit")
	}
	if !rp.cmd.ProcessState.Success() {
		t.Errorf("reaper exit: %v", rp.cmd.ProcessState)
	}
	var kills, removes int
	for _, g := range f.got() {
		switch {
		case strings.Contains(g, "theirs"):
			t.Errorf("touched another executor's container: %s", g)
		case g == "POST mine/kill":
			kills++
		case g == "DELETE mine":
			removes++
		}
	}
	if kills == 0 || removes == 0 {
		t.Errorf("calls %q, want a kill and a removal of mine", f.got())
	}
}
