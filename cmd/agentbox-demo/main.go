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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		{"dangerous command refused (non-interactive)", d.dangerous},
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
		verdict, err := s.fn(sctx)
		cancel()
		el := time.Since(t0)
		status := "PASS"
		if err != nil {
			status = "FAIL"
			d.failed++
			verdict = err.Error()
		}
		fmt.Printf("[%2d/%d] %s %7s  %s — %s\n", i+1, len(steps), status, fmtDur(el), s.name, oneLine(verdict))
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
	d.env = os.Environ()
	if os.Getenv("DOCKER_HOST") == "" {
		// The private engine (make engine) lives under the default state
		// dir; hand its address to the demo's agentbox, whose state dir is
		// a fresh one.
		cmd := exec.CommandContext(ctx, d.bin, "engine", "status", "--json")
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("no engine answers (run `make engine`): %v", err)
		}
		var st struct{ Host, Source, Version string }
		if err := json.Unmarshal(out, &st); err != nil || st.Host == "" {
			return "", fmt.Errorf("agentbox engine status --json: %q", out)
		}
		d.env = append(d.env, "DOCKER_HOST="+st.Host)
	}
	cmd := exec.CommandContext(ctx, d.bin, "engine", "status", "--json")
	cmd.Env = d.env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("agentbox engine status: %v", err)
	}
	var st struct{ Host, Source, Version string }
	_ = json.Unmarshal(out, &st)
	return fmt.Sprintf("Docker %s at %s", st.Version, st.Host), nil
}

func (d *demo) project(ctx context.Context) (string, error) {
	if err := os.MkdirAll(d.ws, 0o755); err != nil {
		return "", err
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
	owner := ""
	if os.Geteuid() == 0 {
		// agentbox never runs commands as root: as root, give the sample
		// project to an ordinary user (the one sudo came from, else 1000).
		uid, gid := 1000, 1000
		if u, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && u > 0 {
			uid, gid = u, u
			if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil && g > 0 {
				gid = g
			}
		}
		if err := filepath.WalkDir(d.ws, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		}); err != nil {
			return "", err
		}
		owner = fmt.Sprintf(", owned by uid %d", uid)
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
	cmd.Stderr = os.Stderr
	// No elicitation capability: approvals fall back to the
	// non-interactive decision (deny).
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
