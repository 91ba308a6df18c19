// Command agentbox-demo is `make demo`: it drives a real MCP session with
// agentbox over stdio, using the official Go SDK's client, against a small
// sample project, and shows each promise of agentbox in one line per step
// (verdict and timing): tools listed; files read; a file edited; the
// project's tests run in the sandbox; a dangerous command refused
// non-interactively with its reasons; a forbidden one refused; escapes
// (writing outside the workspace, reaching the network) contained; the
// history and a diff shown; the edit and the test runs' side effects
// undone; the audit chain verified.
//
// It exits 1 if any step does not behave as expected.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bin := flag.String("agentbox", "bin/agentbox", "the agentbox binary")
	keep := flag.Bool("keep", false, "keep the demo's temporary directory")
	verbose := flag.Bool("v", false, "print each tool result in full")
	flag.Parse()
	os.Exit(run(*bin, *keep, *verbose))
}

// demo holds what the steps share.
type demo struct {
	bin, ws, state, cfgFile string
	env                     []string
	verbose                 bool
	session                 *sdk.ClientSession
	digest0                 string
	journal                 []string // journal ids of mutating calls, in order
	editID                  string
	failed                  int
	// details are lines a step shows under its own line (printed after
	// it); serverLog collects what `agentbox mcp` writes to stderr, shown
	// under the step it happened in when that step fails (or with -v).
	details   []string
	serverLog syncBuffer
}

// detail adds lines to show under the current step's line.
func (d *demo) detail(s string) { d.details = append(d.details, s) }

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// take returns and clears what was written so far.
func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	b.b.Reset()
	return s
}

func run(bin string, keep, verbose bool) int {
	abs, err := filepath.Abs(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbox-demo:", err)
		return 1
	}
	// Not under /tmp: inside the sandbox /tmp is a private tmpfs, so a
	// write to the workspace's parent would land there and prove nothing.
	base := ""
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		base = "/var/tmp"
	}
	tmp, err := os.MkdirTemp(base, "agentbox-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbox-demo:", err)
		return 1
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	d := &demo{bin: abs, ws: filepath.Join(tmp, "calc"), state: filepath.Join(tmp, "state"),
		cfgFile: filepath.Join(tmp, "config.yaml"), verbose: verbose}
	fmt.Printf("agentbox demo: sample project in %s, state in %s\n\n", d.ws, d.state)

	steps := []struct {
		name string
		fn   func(context.Context) (string, error)
	}{
		{"engine and images ready", d.engine},
		{"create the sample project", d.project},
		{"start `agentbox mcp` over stdio", d.connect},
		{"list tools", d.listTools},
		{"read files", d.readFiles},
		{"run the tests with Bash (one planted failure)", d.testsFail},
		{"edit calc.sh (fix mul)", d.edit},
		{"run the tests again", d.testsPass},
		{"dangerous command runs contained, Undo brings it back", d.dangerous},
		{"forbidden command refused", d.forbidden},
		{"write outside the workspace refused", d.writeOutside},
		{"escape attempts from inside the sandbox contained", d.escape},
		{"History tool shows the session's calls", d.historyTool},
		{"end the MCP session", d.disconnect},
		{"agentbox history", d.history},
		{"agentbox diff of the edit", d.diff},
		{"agentbox undo: the edit and the test runs' side effects", d.undo},
		{"agentbox audit verify", d.audit},
	}
	ctx := context.Background()
	start := time.Now()
	for i, s := range steps {
		t0 := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		d.details = nil
		verdict, err := s.fn(sctx)
		cancel()
		el := time.Since(t0)
		status := "PASS"
		if err != nil {
			status = "FAIL"
			d.failed++
			verdict = err.Error()
		}
		// The step's line first, then what belongs to it.
		fmt.Printf("[%2d/%d] %s %7s  %s — %s\n", i+1, len(steps), status, fmtDur(el), s.name, oneLine(verdict))
		for _, l := range d.details {
			fmt.Println(l)
		}
		if log := strings.TrimSpace(d.serverLog.take()); log != "" && (err != nil || verbose) {
			fmt.Println("        agentbox mcp said:")
			fmt.Println(indent(log))
		}
		if err != nil && i < 3 {
			fmt.Println("\nagentbox-demo: cannot go on without this step")
			break
		}
	}
	if d.session != nil {
		d.session.Close()
	}
	fmt.Printf("\n%d steps, %d failed, %s\n", len(steps), d.failed, fmtDur(time.Since(start)))
	if d.failed > 0 {
		if keep {
			fmt.Println("kept", tmp)
		}
		return 1
	}
	return 0
}

// nobodyID is the uid and gid the sample project gets when the demo runs
// as root.
const nobodyID = 65534

func fmtDur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 220 {
		s = s[:217] + "..."
	}
	return s
}

// agentbox runs the CLI with the demo's workspace, state dir and config.
func (d *demo) agentbox(ctx context.Context, args ...string) (string, int, error) {
	full := append([]string{"--workspace", d.ws, "--state-dir", d.state, "--config", d.cfgFile}, args...)
	cmd := exec.CommandContext(ctx, d.bin, full...)
	cmd.Env = d.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String() + errb.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return "", -1, err
	}
	return out.String(), 0, nil
}

func (d *demo) engine(ctx context.Context) (string, error) {
	// Start the engine if none answers and build the images if missing,
	// quietly: one line here says what is ready, the full output only
	// when something fails.
	var st struct{ Host, Source, Version string }
	out, err := exec.CommandContext(ctx, d.bin, "engine", "start").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("agentbox engine start: %v\n%s", err, out)
	}
	d.env = os.Environ()
	out, err = exec.CommandContext(ctx, d.bin, "engine", "status", "--json").Output()
	if err != nil || json.Unmarshal(out, &st) != nil || st.Host == "" {
		return "", fmt.Errorf("no engine answers (agentbox engine status: %v %s)", err, out)
	}
	if os.Getenv("DOCKER_HOST") == "" {
		// The demo's agentbox has a fresh state dir: hand it the address
		// of the engine found (the private one lives under the default).
		d.env = append(d.env, "DOCKER_HOST="+st.Host)
	}
	cmd := exec.CommandContext(ctx, d.bin, "--json", "images", "build")
	cmd.Env = d.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		return "", fmt.Errorf("agentbox images build: %v\n%s%s", err, out, stderr.String())
	}
	var built []struct {
		Name  string `json:"name"`
		Built bool   `json:"built"`
	}
	var names []string
	if json.Unmarshal(out, &built) == nil {
		for _, b := range built {
			state := "up to date"
			if b.Built {
				state = "built"
			}
			names = append(names, b.Name+" "+state)
		}
	}
	return fmt.Sprintf("Docker %s at %s (%s); images: %s", st.Version, st.Host, st.Source, strings.Join(names, ", ")), nil
}

func (d *demo) project(ctx context.Context) (string, error) {
	if err := os.MkdirAll(d.ws, 0o755); err != nil {
		return "", err
	}
	owner := ""
	if os.Geteuid() == 0 {
		// agentbox never runs commands as root: like a person would, give
		// the project to an unprivileged user (nobody) when run as root.
		defer func() {
			filepath.WalkDir(d.ws, func(p string, _ os.DirEntry, err error) error {
				if err == nil {
					err = os.Lchown(p, nobodyID, nobodyID)
				}
				return err
			})
		}()
		owner = ", owned by nobody"
	}
	if err := os.MkdirAll(d.state, 0o700); err != nil {
		return "", err
	}
	if err := writeSampleProject(d.ws); err != nil {
		return "", err
	}
	if err := os.WriteFile(d.cfgFile, []byte(demoConfig), 0o600); err != nil {
		return "", err
	}
	dg, lines, err := treeDigest(d.ws)
	if err != nil {
		return "", err
	}
	d.digest0 = dg
	return fmt.Sprintf("%d files%s, tree digest %s", len(lines), owner, dg), nil
}

func (d *demo) connect(ctx context.Context) (string, error) {
	cmd := exec.Command(d.bin, "--workspace", d.ws, "--state-dir", d.state, "--config", d.cfgFile, "mcp")
	cmd.Env = d.env
	cmd.Stderr = &d.serverLog
	// No elicitation capability: what would ask falls back to the
	// non-interactive decision (deny); contained commands do not ask.
	c := sdk.NewClient(&sdk.Implementation{Name: "agentbox-demo", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return "", err
	}
	d.session = cs
	ir := cs.InitializeResult()
	return fmt.Sprintf("%s %s, protocol %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion), nil
}

func (d *demo) disconnect(ctx context.Context) (string, error) {
	if d.session == nil {
		return "", errors.New("no session")
	}
	err := d.session.Close()
	d.session = nil
	if err != nil {
		return "", err
	}
	return "session closed; its background jobs are stopped", nil
}
