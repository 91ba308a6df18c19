package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
)

// EgressRow is one line of `agentbox bench egress --json`: the same curl
// run on the host and in a sandbox (through init's relay and the proxy).
type EgressRow struct {
	Name    string  `json:"name"`
	Unit    string  `json:"unit"`
	Host    float64 `json:"host"`
	Sandbox float64 `json:"sandbox"`
	// Ratio is sandbox/host for throughput; Added is sandbox-host for
	// latency (ms).
	Ratio float64 `json:"ratio,omitempty"`
	// Relay (throughput only) is the host's curl through a bare relay in
	// this process: no policy, no TLS check, the kernel splicing TCP to
	// TCP — what any proxy in the path costs on this machine. VsRelay is
	// sandbox/relay.
	Relay   float64 `json:"relay,omitempty"`
	VsRelay float64 `json:"vs_relay,omitempty"`
	Added   float64 `json:"added_ms,omitempty"`
	Target  string  `json:"target"`
	Met     bool    `json:"met"`
}

// Egress serves a 32 MiB file and a small one over HTTPS (a self-signed
// certificate for 127.0.0.1) on host loopback and fetches them with curl,
// each fetch on a new connection, on the host and in a sandbox of the
// host image with network.mode allowlist and exactly 127.0.0.1 allowed,
// alternating host and sandbox rounds so both see the same load: bulk
// throughput (median of 3n downloads per side; target sandbox >= 0.8x host;
// also the host's curl through a bare splicing relay, the floor any proxy
// on this machine starts from)
// and the p50 time of a small request on a new connection (10n per side;
// target <= 2 ms added).
func Egress(ctx context.Context, progress io.Writer, cfg config.Config, n int) ([]EgressRow, error) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		return nil, fmt.Errorf("curl is required on the host (apt-get install curl): %w", err)
	}
	ws, remove, err := tempDir("agentbox-bench-egress-")
	if err != nil {
		return nil, err
	}
	defer remove()
	certPEM, cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ca := filepath.Join(ws, "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o644); err != nil {
		return nil, err
	}
	for _, p := range []string{ca, ws} {
		if err := giveToOwner(p); err != nil {
			return nil, err
		}
	}
	bulk := make([]byte, 32<<20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(bulk)
			return
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}))
	defer srv.Close()
	base := "https://" + ln.Addr().String()
	relay, err := bareRelay(ctx, ln.Addr().String())
	if err != nil {
		return nil, err
	}
	defer relay.Close()

	cfg.Workspace = ws
	cfg.Sandbox.Image = images.Host
	cfg.Network = config.Network{Mode: config.NetworkAllowlist, Allow: []string{"127.0.0.1"}}
	r, err := openWarm(ctx, &cfg, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close(context.WithoutCancel(ctx))
	if err := r.WaitWarm(ctx, 1); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "egress: %s, n=%d\n", base, n)
	// One curl per line of output: bytes/s for the big file, seconds for
	// the small one.
	bigLoop := fmt.Sprintf("for i in 1 2 3; do curl -sS --cacert %s -o /dev/null -w '%%{speed_download}\\n' %s/big || exit 1; done", ca, base)
	relayLoop := strings.ReplaceAll(bigLoop, "curl ", fmt.Sprintf("curl --connect-to %s:%s ", ln.Addr(), relay.Addr()))
	smallLoop := fmt.Sprintf("for i in $(seq 10); do curl -sS --cacert %s -o /dev/null -w '%%{time_total}\\n' %s/small || exit 1; done", ca, base)
	host := func(shell string) ([]float64, error) {
		out, err := exec.CommandContext(ctx, "sh", "-c", strings.ReplaceAll(shell, "curl ", curl+" ")).Output()
		if err != nil {
			return nil, fmt.Errorf("host curl: %w", err)
		}
		return floats(string(out))
	}
	inSandbox := func(shell string) ([]float64, error) {
		res, err := r.Run(ctx, sandbox.Spec{Shell: shell, Timeout: 2 * time.Minute})
		if err != nil {
			return nil, err
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("curl in the sandbox: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
		}
		return floats(string(res.Stdout))
	}
	var bulkH, bulkS, bulkR, connH, connS []float64
	for i := range n {
		fmt.Fprintf(progress, "egress round %d/%d\n", i+1, n)
		for _, step := range []struct {
			run   func(string) ([]float64, error)
			shell string
			into  *[]float64
		}{{host, bigLoop, &bulkH}, {inSandbox, bigLoop, &bulkS}, {host, smallLoop, &connH}, {inSandbox, smallLoop, &connS}, {host, relayLoop, &bulkR}} {
			// Each step starts on a quiet engine: the pool replaces
			// the container a sandbox step used, and a host step run
			// meanwhile would be measured against that work.
			if err := r.WaitWarm(ctx, math.MaxInt); err != nil {
				return nil, err
			}
			v, err := step.run(step.shell)
			if err != nil {
				return nil, err
			}
			*step.into = append(*step.into, v...)
		}
	}
	bh, bs, br := medianOf(bulkH)/1e6, medianOf(bulkS)/1e6, medianOf(bulkR)/1e6
	ch, cs := medianOf(connH)*1000, medianOf(connS)*1000
	return []EgressRow{
		{Name: "bulk-32MiB-https", Unit: "MB/s", Host: bh, Sandbox: bs, Ratio: bs / bh,
			Relay: br, VsRelay: bs / br, Target: "sandbox >= 0.8x host", Met: bs/bh >= 0.8},
		{Name: "new-connection-p50", Unit: "ms", Host: ch, Sandbox: cs, Added: cs - ch, Target: "<= 2 ms added", Met: cs-ch <= 2},
	}, nil
}

// WriteEgressReport prints the rows as a table.
func WriteEgressReport(w io.Writer, rows []EgressRow) error {
	for _, r := range rows {
		cmp := fmt.Sprintf("%.2fx", r.Ratio)
		if r.Unit == "ms" {
			cmp = fmt.Sprintf("%+.2f ms", r.Added)
		}
		if r.Relay > 0 {
			cmp += fmt.Sprintf("  bare relay %.2f %s (%.2fx host; sandbox %.2fx it)", r.Relay, r.Unit, r.Relay/r.Host, r.VsRelay)
		}
		met := "met"
		if !r.Met {
			met = "NOT met"
		}
		if _, err := fmt.Fprintf(w, "%-20s host %8.2f %s  sandbox %8.2f %s  %s  (target %s: %s)\n", r.Name, r.Host, r.Unit, r.Sandbox, r.Unit, cmp, r.Target, met); err != nil {
			return err
		}
	}
	return nil
}

// bareRelay listens on host loopback and carries each connection to
// target and back with io.Copy (the kernel splices TCP to TCP): the least
// any relay in the path can cost, for comparison with the proxied path.
func bareRelay(ctx context.Context, target string) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					_, _ = io.Copy(up, c)
					_ = up.(*net.TCPConn).CloseWrite()
				}()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln, nil
}

func floats(out string) ([]float64, error) {
	var vs []float64
	for _, f := range strings.Fields(out) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("curl printed %q", f)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("curl printed nothing")
	}
	return vs, nil
}

func medianOf(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// selfSigned is a certificate for 127.0.0.1 that is its own CA.
func selfSigned() ([]byte, tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentbox bench egress"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
