//go:build integration

package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/egress"
)

// TestEgressToolchains: npm, pip and go in the sandbox fetch a tiny
// package each from registries this test serves over HTTPS (a test CA) as
// pkg.test on host loopback, through init's relay and the proxy, with
// only the proxy variables agentbox sets; the operator allows pkg.test
// and exactly 127.0.0.1. Each registry is the least the toolchain reads:
// an npm packument and tarball, a PEP 503 simple index and a wheel, a
// GOPROXY's .info, .mod and .zip.
func TestEgressToolchains(t *testing.T) {
	// The host image runs the host's /usr: Debian's npm and pip there
	// (go is the toolchain building this test, under /usr/local).
	requireDebianTool(t, "/usr/bin/npm", "npm")
	requireDebianTool(t, "/usr/bin/pip3", "python3-pip")
	reg := newToolchainRegistry(t)
	cert, caPEM := testCert(t, "pkg.test")
	var (
		mu     sync.Mutex
		served []string
		base   string // the registries' URL, known once the server listens
	)
	port := serveTLS(t, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := reg.files[r.URL.Path]
		mu.Lock()
		served = append(served, r.URL.Path)
		u := base
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Content-Type", "text/html")
		}
		w.Write(b(u))
	}))
	mu.Lock()
	base = fmt.Sprintf("https://pkg.test:%d", port)
	mu.Unlock()
	r, ws, events := egressRunner(t, config.NetworkAllowlist, []string{"pkg.test", "127.0.0.1"}, nil)
	ca := filepath.Join(ws, "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, shell, want string }{
		{"npm install", fmt.Sprintf("mkdir -p /tmp/np && cd /tmp/np && echo '{}' > package.json && "+
			"npm install --no-audit --no-fund --cache /tmp/npm-cache --cafile %s --registry %s/npm/ tiny-pkg >&2 && "+
			"node -e 'console.log(require(\"tiny-pkg\"))'", ca, base), "tiny npm package 1.0.0"},
		{"pip download and install", fmt.Sprintf("python3 -m pip download -q --no-cache-dir --no-deps --cert %[1]s --index-url %[2]s/simple/ -d /tmp/pip-dl tiny-pkg==1.0.0 >&2 && "+
			"python3 -c 'import os; print(os.listdir(\"/tmp/pip-dl\"))' && "+
			"python3 -m pip install -q --no-cache-dir --no-deps --break-system-packages --cert %[1]s --index-url %[2]s/simple/ --target /tmp/pt tiny-pkg==1.0.0 >&2 && "+
			"PYTHONPATH=/tmp/pt python3 -c 'import tiny_pkg; print(tiny_pkg.GREETING)'", ca, base), "['tiny_pkg-1.0.0-py3-none-any.whl']\ntiny wheel 1.0.0"},
		{"go mod download", fmt.Sprintf("cd /tmp && SSL_CERT_FILE=%s GOPROXY=%s/goproxy GOSUMDB=off GOTOOLCHAIN=local GOMODCACHE=/tmp/gomodcache GOFLAGS=-modcacherw "+
			"go mod download -json tiny.test/m@v1.0.0 >&2 && cat /tmp/gomodcache/tiny.test/m@v1.0.0/m.go", ca, base), "tiny go module 1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			served = nil
			mu.Unlock()
			res, err := runIn(t, r, sandbox.Spec{Shell: tc.shell, Call: "c-" + strings.Fields(tc.name)[0], Timeout: 2 * time.Minute})
			if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), tc.want) {
				t.Fatalf("%v exit %d\nstdout: %s\nstderr: %s\nserved: %v", err, res.ExitCode, res.Stdout, res.Stderr, served)
			}
			ev := callEvent(t, events, "c-"+strings.Fields(tc.name)[0])
			if ev.Host != "pkg.test" || ev.Decision != "allow" || ev.Kind != "connect" || ev.BytesIn == 0 {
				t.Fatalf("audit %+v", ev)
			}
			t.Logf("served %v", served)
		})
	}
	// The same download from a name the operator did not allow: refused
	// before any lookup, and the toolchain says why.
	t.Run("go mod download from an unlisted registry", func(t *testing.T) {
		res, err := runIn(t, r, sandbox.Spec{Call: "c-unlisted", Timeout: time.Minute, Shell: fmt.Sprintf(
			"cd /tmp && SSL_CERT_FILE=%s GOPROXY=https://evil.test:%d/goproxy GOSUMDB=off GOTOOLCHAIN=local GOMODCACHE=/tmp/gomodcache2 go mod download tiny.test/m@v1.0.0", ca, port)})
		if err != nil || res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "agentbox network: not-allowed: evil.test:") {
			t.Fatalf("%v exit %d\n%s\n%s", err, res.ExitCode, res.Stdout, res.Stderr)
		}
		if ev := callEvent(t, events, "c-unlisted"); ev.Host != "evil.test" || ev.Reason != "not-allowed" {
			t.Fatalf("audit %+v", ev)
		}
	})
}

// callEvent is the next audit event of call, skipping those of earlier
// calls (under gVisor a connection's event can come after its command
// returned).
func callEvent(t *testing.T, events chan egress.Event, call string) egress.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, events); ev.Call == call {
			return ev
		}
	}
}

// toolchainRegistry holds the files of the three registries by path; each
// is made from the registry's base URL (tarball links are absolute).
type toolchainRegistry struct {
	files map[string]func(base string) []byte
}

func fixed(b []byte) func(string) []byte { return func(string) []byte { return b } }

func newToolchainRegistry(t *testing.T) *toolchainRegistry {
	t.Helper()
	reg := &toolchainRegistry{files: map[string]func(string) []byte{}}

	// npm: a packument naming one version and its tarball.
	tgz := tarGz(t, map[string]string{
		"package/package.json": `{"name":"tiny-pkg","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     `module.exports = "tiny npm package 1.0.0";`,
	})
	sha := sha1.Sum(tgz)
	integ := sha512.Sum512(tgz)
	reg.files["/npm/tiny-pkg/-/tiny-pkg-1.0.0.tgz"] = fixed(tgz)
	reg.files["/npm/tiny-pkg"] = func(base string) []byte {
		b, _ := json.Marshal(map[string]any{
			"name": "tiny-pkg", "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{"name": "tiny-pkg", "version": "1.0.0",
				"dist": map[string]string{"tarball": base + "/npm/tiny-pkg/-/tiny-pkg-1.0.0.tgz",
					"shasum": hex.EncodeToString(sha[:]), "integrity": "sha512-" + base64.StdEncoding.EncodeToString(integ[:])}}},
		})
		return b
	}

	// PyPI: a PEP 503 simple index and a pure-Python wheel.
	whl := wheel(t, "tiny_pkg", "tiny-pkg", "1.0.0", map[string]string{"tiny_pkg/__init__.py": `GREETING = "tiny wheel 1.0.0"` + "\n"})
	wsum := sha256.Sum256(whl)
	name := "tiny_pkg-1.0.0-py3-none-any.whl"
	reg.files["/files/"+name] = fixed(whl)
	reg.files["/simple/"] = fixed([]byte(`<!DOCTYPE html><html><body><a href="tiny-pkg/">tiny-pkg</a></body></html>`))
	reg.files["/simple/tiny-pkg/"] = fixed([]byte(fmt.Sprintf(`<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`,
		name, hex.EncodeToString(wsum[:]), name)))

	// GOPROXY: the module's version list, .info, .mod and .zip.
	mod := "module tiny.test/m\n\ngo 1.21\n"
	reg.files["/goproxy/tiny.test/m/@v/list"] = fixed([]byte("v1.0.0\n"))
	reg.files["/goproxy/tiny.test/m/@v/v1.0.0.info"] = fixed([]byte(`{"Version":"v1.0.0","Time":"2026-01-02T03:04:05Z"}`))
	reg.files["/goproxy/tiny.test/m/@v/v1.0.0.mod"] = fixed([]byte(mod))
	reg.files["/goproxy/tiny.test/m/@v/v1.0.0.zip"] = fixed(zipOf(t, map[string]string{
		"tiny.test/m@v1.0.0/go.mod": mod,
		"tiny.test/m@v1.0.0/m.go":   "package m\n\n// Greeting: tiny go module 1.0.0\nconst Greeting = \"tiny go module 1.0.0\"\n",
	}))
	return reg
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wheel builds a pure-Python wheel with its METADATA, WHEEL and a RECORD
// holding every file's hash.
func wheel(t *testing.T, dist, project, version string, files map[string]string) []byte {
	t.Helper()
	info := fmt.Sprintf("%s-%s.dist-info/", dist, version)
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	all[info+"METADATA"] = fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", project, version)
	all[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: agentbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	var record strings.Builder
	for name, body := range all {
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString(info + "RECORD,,\n")
	all[info+"RECORD"] = record.String()
	return zipOf(t, all)
}
