package frontdoor_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// A server puts its handler behind the door's token; a client sends the
// token it read from the file on every request.
func ExampleRequire() {
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(state)
	key, err := frontdoor.Ensure(frontdoor.KeyPath(state, "ui"))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(frontdoor.Require(key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "welcome")
	}), frontdoor.WithHint("The token is in "+key.Path()+".")))
	defer srv.Close()

	resp, _ := http.Get(srv.URL)
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	resp.Body.Close()

	tok, _ := key.Token()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, _ = http.DefaultClient.Do(req)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 401 Bearer realm="agentbox"
	// 200 welcome
}

// A unix-socket door: the kernel names each peer; only this uid and root
// (and uids given with AllowUID) are served.
func ExampleListenUnix() {
	dir, _ := os.MkdirTemp("", "fd")
	defer os.RemoveAll(dir)
	l, err := frontdoor.ListenUnix(filepath.Join(dir, "run", "door.sock"))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	srv := &http.Server{ConnContext: frontdoor.ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := frontdoor.PeerFromContext(r.Context())
		fmt.Fprint(w, p.UID == uint32(os.Geteuid()))
	})}
	go srv.Serve(l)
	defer srv.Close()

	c := &http.Client{Transport: &http.Transport{DialContext: unixDialer(l.Path())}}
	resp, err := c.Get("http://door/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("served as myself:", string(body))
	// Output: served as myself: true
}

// unixDialer dials path whatever address an http.Transport asks for.
func unixDialer(path string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}
