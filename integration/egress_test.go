//go:build integration

package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/egress"
)

// nameMap is the proxy's resolver in these tests: names of the test's own
// servers on host loopback.
type nameMap map[string]netip.Addr

func (m nameMap) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// egressServer is an HTTPS server on host loopback with a certificate
// for pkg.test (and evil.test) from a CA whose PEM it returns.
func egressServer(t *testing.T) (port int, caPEM []byte) {
	t.Helper()
	cert, caPEM := testCert(t, "pkg.test", "evil.test")
	return serveTLS(t, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})), caPEM
}

// testCert issues a server certificate for names from a fresh CA; it
// returns the certificate and the CA's PEM.
func testCert(t *testing.T, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	leaf, err := x509.CreateCertificate(rand.Reader, leafT, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leaf}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// serveTLS serves h with TLS (cert) on a fresh host loopback port.
func serveTLS(t *testing.T, cert tls.Certificate, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// egressRunner opens a host-image runner with the given network config;
// the proxy's audit events arrive on the returned channel.
func egressRunner(t *testing.T, mode string, allow, deny []string) (*docker.Runner, string, chan egress.Event) {
	t.Helper()
	ensureHostImage(t)
	ws := newWorkspace(t)
	cfg := testConfig(t, ws)
	cfg.Sandbox.Image = images.Host
	cfg.Network = config.Network{Mode: mode, Allow: allow, Deny: deny}
	events := make(chan egress.Event, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loop := netip.MustParseAddr("127.0.0.1")
	r, err := docker.New(ctx, cli, cfg, nil,
		docker.WithEgressAudit(func(ev egress.Event) { events <- ev }),
		docker.WithEgressGate(egress.WithResolver(nameMap{"pkg.test": loop, "evil.test": loop, "denied.test": loop})))
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.Close(ctx)
	})
	return r, ws, events
}

func nextEvent(t *testing.T, events chan egress.Event) egress.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no egress audit event")
	}
	return egress.Event{}
}

func TestEgressAllowlist(t *testing.T) {
	port, caPEM := egressServer(t)
	// The proxy runs in this process: a host loopback server is reachable
	// only because this exact address is allowed.
	r, ws, events := egressRunner(t, config.NetworkAllowlist, []string{"pkg.test", "evil.test", "127.0.0.1"}, []string{"denied.test"})
	ca := filepath.Join(ws, "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(call, shell string) (sandbox.Result, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := runIn(t, r, sandbox.Spec{Shell: shell, Call: call, Session: "s-egress"})
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		return res, time.Since(start)
	}
	t.Run("curl https to an allowed name", func(t *testing.T) {
		res, _ := run("c-allowed", fmt.Sprintf("curl -sS --cacert %s https://pkg.test:%d/x", ca, port))
		if res.ExitCode != 0 || string(res.Stdout) != fmt.Sprintf("hello from pkg.test:%d", port) {
			t.Fatalf("exit %d, out %q, err %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		ev := nextEvent(t, events)
		if ev.Call != "c-allowed" || ev.Session != "s-egress" || ev.Host != "pkg.test" || ev.Decision != "allow" || ev.BytesIn == 0 || ev.BytesOut == 0 {
			t.Fatalf("audit %+v", ev)
		}
	})
	t.Run("TLS name differs from the CONNECT host", func(t *testing.T) {
		// --connect-to makes curl CONNECT to pkg.test while its TLS
		// names evil.test (which the server's certificate also covers).
		res, _ := run("c-sni", fmt.Sprintf("curl -sS --cacert %s --connect-to evil.test:%d:pkg.test:%d https://evil.test:%d/", ca, port, port, port))
		if res.ExitCode == 0 {
			t.Fatalf("curl connected: %s", res.Stdout)
		}
		if ev := nextEvent(t, events); ev.Reason != egress.ReasonSNIMismatch || ev.Call != "c-sni" {
			t.Fatalf("audit %+v\ncurl: %s\n%s", ev, res.Stdout, res.Stderr)
		}
	})
	t.Run("denied name", func(t *testing.T) {
		res, _ := run("c-denied", fmt.Sprintf("curl -sS --cacert %s https://denied.test:%d/", ca, port))
		// curl shows only the status of a refused CONNECT; init repeats
		// the proxy's explanation on stderr.
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "403") || !strings.Contains(string(res.Stderr), `agentbox network: denied: denied.test:`) ||
			!strings.Contains(string(res.Stderr), `remove "denied.test" from network.deny`) {
			t.Fatalf("exit %d, err %q", res.ExitCode, res.Stderr)
		}
		if ev := nextEvent(t, events); ev.Reason != egress.ReasonDenied {
			t.Fatalf("audit %+v", ev)
		}
	})
	t.Run("unlisted literal in hex", func(t *testing.T) {
		res, _ := run("c-literal", fmt.Sprintf("curl -sS -i http://0x7f.2:%d/", port))
		if !strings.Contains(string(res.Stdout), "X-Agentbox-Error: ip-literal") {
			t.Fatalf("exit %d, out %q, err %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		nextEvent(t, events)
	})
	t.Run("direct connections ignoring the proxy have no route", func(t *testing.T) {
		res, d := run("c-direct", "curl --noproxy '*' -sS --max-time 20 http://192.0.2.1/; echo tcp=$?; "+
			"bash -c 'echo x > /dev/udp/192.0.2.1/53' 2>&1; echo udp=$?")
		out := string(res.Stdout) + string(res.Stderr)
		// "Network is unreachable" under runc, "No route to host" under gVisor.
		noRoute := strings.Contains(out, "unreachable") || strings.Contains(out, "No route to host")
		if !strings.Contains(out, "tcp=7") || !strings.Contains(out, "udp=1") || !noRoute || d > 15*time.Second {
			t.Fatalf("after %s: %q", d, out)
		}
		select {
		case ev := <-events:
			t.Fatalf("a direct connection reached the proxy: %+v", ev)
		default:
		}
	})
}

func TestEgressModeNoneFailsFast(t *testing.T) {
	port, _ := egressServer(t)
	r, _, events := egressRunner(t, config.NetworkNone, nil, nil)
	for _, tc := range []struct{ name, shell, want string }{
		{"curl https", fmt.Sprintf("curl -sS https://pkg.test:%d/", port), "no network"},
		{"curl http shows the refusal", fmt.Sprintf("curl -sS -w ' status=%%{http_code}' http://pkg.test:%d/ && test 0 = 1", port), "network.mode is none); nothing outside it is reachable (to allow it: the operator sets network.mode: allowlist and lists the domain in network.allow (user config))\n status=403"},
		{"npm", "npm view left-pad version", "no network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := runIn(t, r, sandbox.Spec{Shell: tc.shell, Timeout: time.Minute})
			d := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout) + string(res.Stderr)
			if res.ExitCode == 0 || !strings.Contains(out, tc.want) || d > 20*time.Second {
				t.Fatalf("after %s: exit %d, %q", d, res.ExitCode, out)
			}
			t.Logf("%s failed in %s", tc.name, d.Round(time.Millisecond))
		})
	}
	select {
	case ev := <-events:
		t.Fatalf("mode none started a proxy: %+v", ev)
	default:
	}
}

// TestEgressThroughMCP: an operator allows one exact address; a Bash call
// over MCP reaches it through the proxy, is refused another, its result
// names both, and `agentbox audit --network` shows the connections.
func TestEgressThroughMCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached "+r.URL.Path) })}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newMCPEnv(t, "")
	cfgText := "tools:\n  allow: ['Bash(curl:*)']\nmcp:\n  approval_timeout: 30s\nnetwork:\n  mode: allowlist\n  allow: ['127.0.0.1']\n"
	if err := os.WriteFile(e.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("curl -sS http://127.0.0.1:%d/allowed; echo; curl -sS -o /dev/null -w 'status=%%{http_code}' http://127.0.0.2:%d/refused", port, port)
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env":   map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")},
		"steps": []tsStep{{"op": "call", "id": "curl", "name": "Bash", "args": map[string]any{"command": cmd}, "elicit": []string{"allow_once"}}}})
	var text string
	for _, r := range res {
		if r["op"] == "call" {
			text = r.text()
		}
	}
	if text == "" {
		t.Fatalf("no result for the call: %v", res)
	}
	want := fmt.Sprintf("Network: contacted 127.0.0.1:%d; refused 127.0.0.2:%d (ip-literal).", port, port)
	if !strings.Contains(text, "reached /allowed") || !strings.Contains(text, "status=403") || !strings.Contains(text, want) {
		t.Fatalf("Bash result:\n%s\nwant it to contain %q", text, want)
	}
	out, code := e.agentboxCLI(t, "audit", "--network")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("GET 127.0.0.1:%d via 127.0.0.1:%d", port, port)) || !strings.Contains(out, "ip-literal") {
		t.Fatalf("agentbox audit --network: %d\n%s", code, out)
	}
	if out, code := e.agentboxCLI(t, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: %s", out)
	}
}

// TestEgressApprovalOverElicitation: a name no rule covers is put to the
// person through MCP elicitation, in the call's own session; "allow once"
// lets the connection through, "deny" refuses it, and an explicit deny is
// never asked about.
func TestEgressApprovalOverElicitation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached "+r.Host) })}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newMCPEnv(t, "")
	// localhost resolves on the host (the proxy's side) through
	// /etc/hosts; its addresses are allowed exactly, the name is not.
	cfgText := "mcp:\n  approval_timeout: 30s\nnetwork:\n  mode: allowlist\n  allow: ['127.0.0.1', '::1']\n  deny: ['ip6-localhost']\n"
	if err := os.WriteFile(e.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(host string) string {
		return fmt.Sprintf("curl -sS -w ' status=%%{http_code}' http://%s:%d/", host, port)
	}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME")},
		"steps": []tsStep{
			// The Bash calls themselves run unasked (contained); the
			// questions are the network's.
			{"op": "call", "id": "yes", "name": "Bash", "args": map[string]any{"command": get("localhost")}, "elicit": []string{"allow_once"}},
			{"op": "call", "id": "no", "name": "Bash", "args": map[string]any{"command": get("localhost")}, "elicit": []string{"deny"}},
			{"op": "call", "id": "denied", "name": "Bash", "args": map[string]any{"command": get("ip6-localhost")}, "elicit": []string{"allow_once"}},
		}})
	var texts []string
	var elicits []int
	for _, r := range res {
		if r["op"] == "call" {
			texts = append(texts, r.text())
			el, _ := r["elicitations"].([]any)
			elicits = append(elicits, len(el))
		}
	}
	if len(texts) != 3 {
		t.Fatalf("results: %v", res)
	}
	if !strings.Contains(texts[0], fmt.Sprintf("reached localhost:%d status=200", port)) || elicits[0] != 1 {
		t.Errorf("approved (%d questions):\n%s", elicits[0], texts[0])
	}
	if !strings.Contains(texts[1], "status=403") || !strings.Contains(texts[1], "approval-denied") || elicits[1] != 1 {
		t.Errorf("refused (%d questions):\n%s", elicits[1], texts[1])
	}
	if !strings.Contains(texts[2], "status=403") || !strings.Contains(texts[2], "(denied)") || elicits[2] != 0 {
		t.Errorf("explicit deny (%d questions):\n%s", elicits[2], texts[2])
	}
	out, _ := e.agentboxCLI(t, "audit", "--network")
	if !strings.Contains(out, "allow (mcp-elicitation)") || !strings.Contains(out, "approval-denied") {
		t.Errorf("audit --network does not show the approval:\n%s", out)
	}
}

// TestWebFetchThroughMCP: the WebFetch tool fetches on the host through the
// same policy: an allowed name's page comes back as Markdown in an
// untrusted block with the prompt; http is upgraded to https; a denied
// name is refused; both are in the audit log.
func TestWebFetchThroughMCP(t *testing.T) {
	cert, caPEM := testCert(t, "localhost")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	port := serveTLS(t, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Guide</title></head><body><article><h1>Guide</h1><p>Step one: read the `+
			`<a href="/more">manual</a>. `+strings.Repeat("Plenty of words make this an article. ", 12)+`</p></article><script>steal()</script></body></html>`)
	}))
	e := newMCPEnv(t, "")
	cfgText := "network:\n  mode: allowlist\n  allow: ['localhost', '127.0.0.1', '::1']\n  deny: ['ip6-localhost']\n"
	if err := os.WriteFile(e.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env": map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME"), "SSL_CERT_FILE": caFile},
		"steps": []tsStep{
			{"op": "call", "id": "fetch", "name": "WebFetch", "args": map[string]any{"url": fmt.Sprintf("http://localhost:%d/guide", port), "prompt": "what is step one?"}},
			{"op": "call", "id": "denied", "name": "WebFetch", "args": map[string]any{"url": fmt.Sprintf("https://ip6-localhost:%d/", port), "prompt": "x"}},
		}})
	var texts []string
	for _, r := range res {
		if r["op"] == "call" {
			texts = append(texts, r.text())
		}
	}
	if len(texts) != 2 {
		t.Fatalf("results: %v", res)
	}
	if c := texts[0]; !strings.Contains(c, "Step one: read the [manual]") || strings.Contains(c, "steal()") ||
		!strings.Contains(c, fmt.Sprintf(`<untrusted_content source="https://localhost:%d/guide">`, port)) || !strings.Contains(c, "what is step one?") {
		t.Fatalf("fetch result:\n%s", c)
	}
	if !strings.Contains(texts[1], `network.deny "ip6-localhost"`) {
		t.Fatalf("denied fetch:\n%s", texts[1])
	}
	out, _ := e.agentboxCLI(t, "audit", "--network")
	if !strings.Contains(out, fmt.Sprintf("WebFetch localhost:%d via 127.0.0.1:%d", port, port)) || !strings.Contains(out, "denied") {
		t.Fatalf("audit --network:\n%s", out)
	}
}

// TestEgressGitClone: git in the sandbox clones over smart HTTP (git
// http-backend on the host, HTTPS with a test CA) through the proxy,
// reading only the proxy variables; an unlisted name is refused.
func TestEgressGitClone(t *testing.T) {
	src := filepath.Join(t.TempDir(), "repos")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", filepath.Join(src, "work")},
		{"-C", filepath.Join(src, "work"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "through the proxy"},
		{"clone", "-q", "--bare", filepath.Join(src, "work"), filepath.Join(src, "repo.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	port, ca := gitServer(t, src)
	r, ws, events := egressRunner(t, config.NetworkAllowlist, []string{"pkg.test", "127.0.0.1"}, nil)
	caFile := filepath.Join(ws, "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := runIn(t, r, sandbox.Spec{Call: "c-git", Shell: fmt.Sprintf(
		"git -c http.sslCAInfo=%s clone -q https://pkg.test:%d/repo.git /tmp/clone && git -C /tmp/clone log --format=%%s", caFile, port)})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "through the proxy" {
		t.Fatalf("git clone: %v exit %d\n%s\n%s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if ev := nextEvent(t, events); ev.Call != "c-git" || ev.Host != "pkg.test" || ev.Decision != "allow" || ev.BytesIn == 0 {
		t.Fatalf("audit %+v", ev)
	}
	res, _ = runIn(t, r, sandbox.Spec{Shell: fmt.Sprintf("git -c http.sslCAInfo=%s clone -q https://other.test:%d/repo.git /tmp/c2", caFile, port)})
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "not-allowed") {
		t.Fatalf("unlisted clone: exit %d\n%s", res.ExitCode, res.Stderr)
	}
}

// gitServer serves the bare repositories under root over smart HTTP
// (git http-backend as CGI) with TLS for pkg.test; it returns the port
// and the CA's PEM.
func gitServer(t *testing.T, root string) (int, []byte) {
	t.Helper()
	cert, caPEM := testCert(t, "pkg.test")
	h := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	return serveTLS(t, cert, h), caPEM
}

// TestEgressWorkspaceSocket (issue 19, section 4): an executor relaying to
// the egress proxy needs host unix sockets reachable; under gVisor
// (--host-uds=open) no mask can be mounted over a workspace socket, so a
// host listener in the workspace received a sandboxed command's data. The
// call is refused there (runc masks the socket); either way nothing
// arrives, and the relay itself still works.
func TestEgressWorkspaceSocket(t *testing.T) {
	port, caPEM := egressServer(t)
	r, ws, events := egressRunner(t, config.NetworkAllowlist, []string{"pkg.test", "127.0.0.1"}, nil)
	ca := filepath.Join(ws, "ca.pem")
	must(t, os.WriteFile(ca, caPEM, 0o644))
	res, err := runIn(t, r, sandbox.Spec{Shell: fmt.Sprintf("curl -sS --cacert %s https://pkg.test:%d/x", ca, port), Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("the relay does not work: %v %+v", err, res)
	}
	nextEvent(t, events)
	host := filepath.Join(ws, "host.sock")
	got := hostListener(t, host)
	res, err = runIn(t, r, sandbox.Spec{Shell: pyConnect + host, Timeout: time.Minute})
	out := string(res.Stdout) + string(res.Stderr)
	t.Logf("runtime %q: %v %s", runtimeName, err, strings.TrimSpace(out))
	time.Sleep(200 * time.Millisecond)
	if n := got.Load(); n != 0 {
		t.Fatalf("the host listener received %d bytes from the sandbox", n)
	}
	if runtimeName == "runsc" && !errors.Is(err, sandbox.ErrUnsafeWorkspace) {
		t.Errorf("under gVisor with host sockets open a workspace socket did not refuse the call: %v %q", err, out)
	}
	if runtimeName != "runsc" && !strings.Contains(out, "REFUSED") {
		t.Errorf("the connect did not fail: %v %q", err, out)
	}
}
