//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEgressProxyFailsToStartFailsClosed: with network.mode allowlist,
// when the egress proxy cannot start (its socket cannot be
// bound: the temp dir agentbox is given is too long a path), a Bash call
// fails with an error that names the proxy, and the command never runs
// (not without a proxy, not with a network), even when the person
// approves it (an unavailable sandbox is never auto-allowed).
func TestEgressProxyFailsToStartFailsClosed(t *testing.T) {
	e := newMCPEnv(t, "")
	cfgText := "network:\n  mode: allowlist\n  allow: ['127.0.0.1']\n"
	if err := os.WriteFile(e.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	// The proxy's socket lives in a directory under the temp dir; a unix
	// socket path must fit in 108 bytes, so under this temp dir (which
	// everything else, image builds included, copes with) it cannot bind.
	longTmp := filepath.Join(t.TempDir(), strings.Repeat("long-temp-dir-", 8))
	if err := os.MkdirAll(longTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	res := runTS(t, map[string]any{"transport": "stdio", "command": agentbox, "args": e.args("mcp"),
		"env":   map[string]string{"PATH": os.Getenv("PATH"), "DOCKER_HOST": cli.DaemonHost(), "HOME": os.Getenv("HOME"), "TMPDIR": longTmp},
		"steps": []tsStep{{"op": "call", "id": "run", "name": "Bash", "args": map[string]any{"command": "touch ran-without-proxy; curl -sS http://127.0.0.1:9/"}, "elicit": []string{"allow_once"}}}})
	var call tsResult
	for _, r := range res {
		if r["op"] == "call" {
			call = r
		}
	}
	if call == nil {
		t.Fatalf("no result for the call: %v", res)
	}
	text := call.text()
	t.Logf("result (%s): %s", call.errorKind(), text)
	if !call.isError() || !strings.Contains(text, "egress proxy, and it could not start (egress listen: listen unix "+longTmp+"/agentbox-egress-") ||
		!strings.Contains(text, "bind: invalid argument") || !strings.Contains(text, "never run without it") {
		t.Fatalf("the call did not fail naming the proxy:\n%s", text)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "ran-without-proxy")); !os.IsNotExist(err) {
		t.Fatalf("the command ran although the proxy did not start (%v)", err)
	}
}
