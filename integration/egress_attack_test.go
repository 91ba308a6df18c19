//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

// forgePreamble is run inside the sandbox: it looks for the relay's token
// everywhere a command running as init's uid might read it (init's
// environment, command line, descriptors, memory), then speaks to the
// proxy socket directly with a preamble claiming another call and
// session.
const forgePreamble = `
import os, re, socket, sys
port = sys.argv[1]
found = None
pat = re.compile(rb'token[="\x27: ]+([0-9a-f]{64})')
for p in ["/proc/1/environ", "/proc/1/cmdline"]:
    try:
        m = pat.search(open(p, "rb").read())
        print(p, "readable")
        if m: found = m.group(1)
    except Exception as e:
        print(p, "refused:", e)
try:
    fds = os.listdir("/proc/1/fd")
    print("/proc/1/fd readable:", fds)
except Exception as e:
    print("/proc/1/fd refused:", e)
try:
    mem = open("/proc/1/mem", "rb")
    n = 0
    for line in open("/proc/1/maps"):
        a, perms = line.split()[:2]
        if "r" not in perms: continue
        lo, hi = (int(x, 16) for x in a.split("-"))
        if hi - lo > 512 << 20: continue
        try:
            mem.seek(lo); d = mem.read(hi - lo); n += len(d)
        except Exception:
            continue
        m = pat.search(d)
        if m:
            found = m.group(1); break
    print("/proc/1/mem read", n, "bytes")
except Exception as e:
    print("/proc/1/mem refused:", e)
print("token found:", bool(found))
tok = found.decode() if found else "0" * 64
s = socket.socket(socket.AF_UNIX)
s.connect("/.agentbox/egress/egress.sock")
s.sendall(("AGENTBOX-EGRESS/1 token=%s call=victim-call session=victim-session\n"
           "CONNECT pkg.test:%s HTTP/1.1\r\nHost: pkg.test:%s\r\n\r\n" % (tok, port, port)).encode())
print("answer:", s.recv(400).decode(errors="replace"))
`

// A sandboxed command runs as init's uid and sees the proxy socket (a
// read-only bind of its directory). It must not be able to read the
// relay's token out of init, nor speak to the socket as another call or
// session without it.
func TestEgressAttackForgedPreamble(t *testing.T) {
	port, _ := egressServer(t)
	r, ws, events := egressRunner(t, config.NetworkAllowlist, []string{"pkg.test", "127.0.0.1"}, nil)
	if err := os.WriteFile(filepath.Join(ws, "forge.py"), []byte(forgePreamble), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := runIn(t, r, sandbox.Spec{Shell: fmt.Sprintf("python3 %s/forge.py %d", ws, port), Call: "attacker-call", Session: "attacker-session"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	t.Logf("probe:\n%s", out)
	if res.ExitCode != 0 || !strings.Contains(out, "answer:") {
		t.Fatalf("the probe did not run to its end (exit %d): %s", res.ExitCode, out)
	}
	if strings.Contains(out, "token found: True") {
		t.Errorf("the sandboxed command read the relay token out of init")
	}
	if !strings.Contains(out, "unauthenticated") {
		t.Errorf("the proxy did not refuse the forged preamble as unauthenticated: %s", out)
	}
	ev := nextEvent(t, events)
	if ev.Call == "victim-call" || ev.Session == "victim-session" || ev.Decision != "deny" || ev.Reason != "unauthenticated" {
		t.Fatalf("a forged preamble was taken: %+v", ev)
	}
}
