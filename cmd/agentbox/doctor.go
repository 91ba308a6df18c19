package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/client"
	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/engine"
	"github.com/agentbox/agentbox/snapshot"
	mcpserver "github.com/agentbox/agentbox/tools/mcp"
	"github.com/agentbox/agentbox/tools/termtext"
)

func init() { register(newDoctorCmd) }

// check is one doctor finding.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn, fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
)

func newDoctorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the engine, images, state dir, permissions and config, and say what to fix",
		Long: `doctor checks what agentbox needs: a loadable configuration, a state
directory outside the workspace that only you can write, a Docker engine that
answers, the sandbox images, and a workspace the sandbox can write as its
owner. Each failed check says how to fix it. Exit status 1 when any check
fails (warnings do not fail).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			checks := runDoctor(ctx, a)
			failed := false
			for _, c := range checks {
				if c.Status == statusFail {
					failed = true
				}
			}
			if a.jsonOut {
				enc := json.NewEncoder(jsonWriter{a.stdout()})
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"ok": !failed, "checks": checks}); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout(), 0, 4, 2, ' ', 0)
				for _, c := range checks {
					// Details quote paths, engine answers and errors.
					fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(c.Status), termtext.Line(c.Name), termtext.Line(c.Detail))
					if c.Fix != "" && c.Status != statusOK {
						fmt.Fprintf(tw, "\t\tfix: %s\n", termtext.Line(c.Fix))
					}
				}
				tw.Flush()
				if failed {
					fmt.Fprintln(a.stdout(), "\nSome checks failed; fix them and run agentbox doctor again.")
				} else {
					fmt.Fprintln(a.stdout(), "\nagentbox is ready.")
				}
			}
			if failed {
				return exitCode(1)
			}
			return nil
		},
	}
}

func runDoctor(ctx context.Context, a *app) []check {
	var out []check
	cfg, err := a.Config()
	if err != nil {
		return append(out, check{Name: "config", Status: statusFail, Detail: err.Error(),
			Fix: "correct the named key in the config file (agentbox config show prints the effective config)"})
	}
	cfgDetail := "loaded"
	if a.configFile != "" {
		cfgDetail = "loaded from " + a.configFile
	}
	out = append(out, check{Name: "config", Status: statusOK, Detail: cfgDetail + "; workspace " + cfg.Workspace})
	out = append(out, checkStateDir(cfg)...)
	out = append(out, checkWorkspace(cfg))
	out = append(out, checkCapture(cfg))
	out = append(out, checkToolchains(cfg)...)
	out = append(out, checkMCP(cfg))
	cli, info, err := engine.Connect(ctx, cfg)
	if err != nil {
		fix := "run `agentbox engine start` (as root it starts a private dockerd, installing docker.io if needed), or set DOCKER_HOST to a running engine"
		if os.Geteuid() != 0 {
			fix = "start Docker (or Podman's Docker API) and make sure you may use its socket, set DOCKER_HOST, or run `sudo agentbox engine start`"
		}
		out = append(out, check{Name: "engine", Status: statusFail, Detail: err.Error(), Fix: fix})
		out = append(out, check{Name: "images", Status: statusFail, Detail: "not checked: no engine", Fix: "start the engine first"})
		return out
	}
	defer cli.Close()
	out = append(out, check{Name: "engine", Status: statusOK, Detail: fmt.Sprintf("%s %s at %s (found via %s)", engineKind(info), info.Version, info.Host, info.Source)})
	out = append(out, checkBackend(ctx, cli, cfg, info))
	out = append(out, checkImages(ctx, cli, cfg)...)
	return out
}

// engineKind names the engine product behind info.
func engineKind(info engine.Info) string {
	if info.Backend == engine.BackendPodman {
		return "Podman"
	}
	return "Docker"
}

// checkBackend names the sandbox backend and runtime and checks that the
// engine can serve them: registered, local, offering the runtime.
func checkBackend(ctx context.Context, cli client.APIClient, cfg *config.Config, info engine.Info) check {
	name := sandbox.BackendName(cfg)
	detail := "backend " + name
	if cfg.Sandbox.Runtime != "" {
		detail += ", runtime " + cfg.Sandbox.Runtime
	}
	c := check{Name: "sandbox backend", Status: statusOK, Detail: detail}
	switch {
	case !slices.Contains(sandbox.Backends(), name):
		c.Status, c.Detail = statusFail, detail+": not registered (registered: "+strings.Join(sandbox.Backends(), ", ")+")"
		c.Fix = "set sandbox.backend to one of the registered backends"
	case info.Remote:
		c.Status, c.Detail = statusFail, detail+": the engine at "+info.Host+" is remote and cannot see this machine's workspace"
		c.Fix = "use a local engine: unset DOCKER_HOST / engine.host, or run `agentbox engine start`"
	default:
		if err := engine.CheckRuntime(ctx, cli, cfg.Sandbox.Runtime); err != nil {
			c.Status, c.Detail = statusFail, err.Error()
			c.Fix = "run `agentbox engine start` as root (it installs and registers " + cfg.Sandbox.Runtime + " with the private engine)"
		}
	}
	return c
}

func checkStateDir(cfg *config.Config) []check {
	dir := cfg.StateDir
	c := check{Name: "state dir", Status: statusOK, Detail: dir}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(dir)
		for parent != "/" {
			if _, err := os.Stat(parent); err == nil {
				break
			}
			parent = filepath.Dir(parent)
		}
		if werr := writable(parent); werr != nil {
			c.Status, c.Detail = statusFail, fmt.Sprintf("%s does not exist and %s is not writable: %v", dir, parent, werr)
			c.Fix = "create it (mkdir -p -m 0700 " + dir + ") or set AGENTBOX_STATE_DIR / --state-dir to a writable directory"
		} else {
			c.Detail = dir + " (will be created on first use)"
		}
		return []check{c}
	case err != nil:
		c.Status, c.Detail, c.Fix = statusFail, err.Error(), "make "+dir+" readable or choose another with --state-dir"
		return []check{c}
	case !fi.IsDir():
		c.Status, c.Detail, c.Fix = statusFail, dir+" is not a directory", "remove it or choose another state dir with --state-dir"
		return []check{c}
	}
	if werr := writable(dir); werr != nil {
		c.Status, c.Detail, c.Fix = statusFail, fmt.Sprintf("%s is not writable: %v", dir, werr), "fix its ownership (chown) or choose another state dir"
		return []check{c}
	}
	perm := check{Name: "state dir permissions", Status: statusOK, Detail: fmt.Sprintf("%s is %04o", dir, fi.Mode().Perm())}
	if fi.Mode().Perm()&0o022 != 0 {
		perm.Status = statusFail
		perm.Detail = fmt.Sprintf("%s is %04o: others can change snapshots, the journal and the audit log", dir, fi.Mode().Perm())
		perm.Fix = "chmod go-w " + dir
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		perm.Status = statusWarn
		perm.Detail = fmt.Sprintf("%s belongs to uid %d, not to you (uid %d)", dir, st.Uid, os.Geteuid())
		perm.Fix = "use a state dir you own"
	}
	return []check{c, perm}
}

// checkCapture reports how shell commands' changes are found, and whether
// a periodic full-scan check ever disagreed with the kernel's reports.
func checkCapture(cfg *config.Config) check {
	c := check{Name: "change capture", Status: statusOK}
	st, err := snapshot.CaptureReport(cfg)
	if err != nil {
		c.Status, c.Detail = statusWarn, err.Error()
		return c
	}
	if st.Mode == "watch" {
		c.Detail = "fanotify: scans look only at what changed"
	} else {
		c.Detail = "full scans of the workspace before and after each command (" + st.Reason + ")"
	}
	c.Detail += fmt.Sprintf("; %d full-scan checks, %d mismatches", st.Checks, st.Mismatches)
	if st.Mismatches > 0 {
		c.Status = statusWarn
		c.Detail += "; " + st.LastFull
		c.Fix = "report it; set snapshot.change_capture: scan to walk the whole tree every time"
	}
	return c
}

func checkWorkspace(cfg *config.Config) check {
	c := check{Name: "workspace", Status: statusOK, Detail: cfg.Workspace}
	fi, err := os.Stat(cfg.Workspace)
	if err != nil {
		c.Status, c.Detail, c.Fix = statusFail, err.Error(), "run agentbox in an existing directory or pass --workspace"
		return c
	}
	if cfg.Workspace == "/" {
		c.Status, c.Detail = statusFail, "the workspace is the root directory: the sandbox would see the whole machine"
		c.Fix = "run agentbox inside a project directory or pass --workspace DIR"
		return c
	}
	if err := sandbox.CheckOwner(cfg.Workspace, cfg.Sandbox.AllowRootWorkspace); err != nil {
		c.Status, c.Detail = statusFail, strings.TrimPrefix(err.Error(), sandbox.ErrUnsafeWorkspace.Error()+": ")
		if i := strings.Index(c.Detail, "; give the workspace"); i > 0 {
			c.Detail = c.Detail[:i]
		}
		c.Fix = "`chown -R USER: " + cfg.Workspace + "` (the user the agent works for), or, knowing the risk, set sandbox.allow_root_workspace: true in your user config"
		return c
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		c.Detail = fmt.Sprintf("%s (owner uid %d: sandboxed commands run as %d:%d)", cfg.Workspace, st.Uid, st.Uid, st.Gid)
		if fi.Mode().Perm()&0o200 == 0 {
			c.Status, c.Fix = statusWarn, "the owner cannot write the workspace: chmod u+w "+cfg.Workspace
		}
	}
	return c
}

func checkMCP(cfg *config.Config) check {
	c := check{Name: "mcp", Status: statusOK}
	if cfg.MCP.BearerToken == "" {
		c.Detail = "stdio ready; HTTP only on loopback, every request with the token in " + frontdoor.KeyPath(cfg.StateDir, mcpDoorName)
	} else {
		c.Detail = "stdio ready; HTTP requires the configured bearer token"
	}
	if cfg.MCP.HTTPAddr != "" {
		if err := mcpserver.CheckListen(cfg.MCP.HTTPAddr, cfg.MCP.BearerToken); err != nil {
			c.Status, c.Detail, c.Fix = statusFail, err.Error(), "set mcp.bearer_token (or AGENTBOX_MCP_BEARER_TOKEN) or listen on 127.0.0.1"
			return c
		}
	}
	if err := mcpKeyHealth(cfg); err != nil {
		c.Status, c.Detail, c.Fix = statusFail, err.Error(), "agentbox mcp token rotate"
		return c
	}
	if cfg.MCP.NonInteractive == "allow" {
		c.Status = statusWarn
		c.Detail += "; calls that need approval are ALLOWED when the client cannot ask its user"
		c.Fix = "set mcp.non_interactive: deny unless every client is trusted"
	}
	return c
}

func checkImages(ctx context.Context, cli *client.Client, cfg *config.Config) []check {
	var out []check
	names := []string{cfg.Sandbox.Image}
	for _, n := range []string{"agentbox/host", "agentbox/minimal"} {
		if n != cfg.Sandbox.Image {
			names = append(names, n)
		}
	}
	for i, name := range names {
		c := check{Name: "image " + name, Status: statusOK}
		insp, err := cli.ImageInspect(ctx, name)
		switch {
		case err == nil:
			c.Detail = fmt.Sprintf("present (%s)", shortID(insp.ID))
			if i == 0 {
				c.Detail += "; the sandbox uses it"
			}
		case i == 0:
			c.Status, c.Detail = statusFail, "missing: the sandbox image (sandbox.image) is not in the engine"
			c.Fix = "run `agentbox images build` (or `make images`)"
		default:
			c.Status, c.Detail, c.Fix = statusWarn, "missing (not the configured sandbox image)", "run `agentbox images build` to have it"
		}
		out = append(out, c)
	}
	return out
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// writable reports whether the current user can create files in dir.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".agentbox-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkToolchains reports the limits and the caches commands get.
func checkToolchains(cfg *config.Config) []check {
	s := cfg.Sandbox
	limits := check{Name: "limits", Status: statusOK,
		Detail: fmt.Sprintf("%g CPUs (%s), %d MiB memory (%s), %d pids, %d MiB /tmp", s.EffectiveCPUs(), autoOr(s.CPUs == 0),
			s.EffectiveMemoryMB(), autoOr(s.MemoryMB == 0), s.PidsLimit, s.TmpSizeMB)}
	if s.EffectiveCPUs() < float64(runtime.NumCPU()) {
		limits.Status = statusWarn
		limits.Detail += fmt.Sprintf("; the host has %d CPUs: builds and tests run slower than on the host", runtime.NumCPU())
		limits.Fix = "set sandbox.cpus: 0 (all CPUs) in your config"
	}
	caches := check{Name: "caches", Status: statusOK}
	rep, err := cachesOf(cfg)
	if err != nil {
		caches.Status, caches.Detail, caches.Fix = statusWarn, err.Error(), "fix the workspace (see the workspace check), then run agentbox caches list"
		return []check{limits, caches}
	}
	caches.Detail = cacheSummary(rep)
	if rep.Home == "" {
		caches.Status = statusWarn
		caches.Detail = "the workspace owner has no home in /etc/passwd: no dependency caches detected; " + caches.Detail
		caches.Fix = "list cache directories in sandbox.caches"
	}
	id := check{Name: "git identity", Status: statusOK}
	switch {
	case !s.GitIdentity:
		id.Detail = "off (sandbox.git_identity: false): commits in the sandbox need the repository's own user.name/user.email"
	case rep.Identity.Name == "" || rep.Identity.Email == "":
		id.Status = statusWarn
		id.Detail = fmt.Sprintf("the owner's global git config has no complete user.name/user.email (name %q, email %q): git commit in the sandbox fails without the repository's own", rep.Identity.Name, rep.Identity.Email)
		id.Fix = "git config --global user.name NAME; git config --global user.email EMAIL (as the workspace owner)"
	default:
		id.Detail = fmt.Sprintf("commits in the sandbox are by %s <%s> (GIT_AUTHOR_*/GIT_COMMITTER_*)", rep.Identity.Name, rep.Identity.Email)
	}
	return []check{limits, caches, id}
}

func autoOr(auto bool) string {
	if auto {
		return "auto"
	}
	return "configured"
}
