package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/atomicfile"
	"github.com/agentbox/agentbox/tools/termtext"
)

func init() { register(newSetupCmd) }

// Native tools each client is told not to use, so that its agent works
// through agentbox's tools instead.
var (
	// Claude Code: permissions.deny rules for every native tool that runs a
	// command, reads or writes a file or fetches a URL on the host (the
	// names Claude Code 2.1 knows; it warns at every launch about a rule
	// that names no tool).
	claudeDeny = []string{"Bash", "Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "WebFetch"}
	// Claude Code: permissions.allow for agentbox's own tools, so that
	// Claude Code does not ask before each call (agentbox decides).
	claudeAllow = []string{"mcp__agentbox__*"}
	// Claude Code: rules earlier versions of setup wrote that name no tool
	// Claude Code 2.1 knows; setup removes them.
	claudeObsolete = []string{"MultiEdit"}
	// Gemini CLI: its native tools that reach the host (Gemini CLI 0.61's
	// names), denied by a policy file of its Policy Engine.
	geminiDeny = []string{"run_shell_command", "write_file", "replace", "read_file", "read_many_files", "glob", "grep_search", "list_directory", "web_fetch"}
	// Gemini CLI: what earlier versions of setup put into tools.exclude
	// (excludeTools), which Gemini CLI 0.61 warns about at every launch;
	// setup removes them.
	geminiExcludeObsolete = []string{"run_shell_command", "write_file", "replace", "web_fetch"}
	// Cursor CLI: permissions.deny in cli.json / cli-config.json.
	cursorDeny = []string{"Shell(*)", "Write(**)", "Read(**)"}
)

// setupClients are the clients `agentbox setup` knows, in help order.
var setupClients = []string{"claude-code", "gemini-cli", "codex", "cursor"}

// setupTarget is what one run of setup writes for.
type setupTarget struct {
	client  string
	user    bool   // --user: the person's own config; else the project's
	ws      string // the workspace (project root)
	home    string
	command string // the agentbox binary the client starts
	// stateDir and configFile are passed to a server whose client starts
	// it with a scrubbed environment (Codex), when they differ from what
	// such a server finds from HOME alone; "" otherwise.
	stateDir, configFile string
	// dockerHost is DOCKER_HOST, passed the same way ("" when unset or
	// when the config names the engine).
	dockerHost string
	http       *httpTarget // --http: an entry for a running server (setup_http.go)
}

// configEdit is one file setup changes: the edit gets the current content
// (nil when the file does not exist) and returns the new content.
type configEdit struct {
	path string
	edit func(old []byte) ([]byte, error)
	// manual is what to add by hand when the edit fails.
	manual string
	// private files hold a token: written 0600.
	private bool
}

func newSetupCmd(a *app) *cobra.Command {
	var project, user, dryRun bool
	var command, httpURL string
	cmd := &cobra.Command{
		Use:   "setup CLIENT [--project | --user] [--http URL] [--dry-run]",
		Short: "Wire agentbox into an agent client: its MCP server entry, and its own shell and file tools off",
		Long: `setup writes, into CLIENT's own config files, the MCP server entry that
starts "agentbox mcp" and the settings that turn off the client's native shell
and file-writing tools, so that its agent works through agentbox. It merges:
every other key is kept, running it twice changes nothing, and it prints a
unified diff of each change (--dry-run prints it and writes nothing).

CLIENT is one of claude-code, gemini-cli, codex, cursor. --project (the
default) writes the workspace's files, --user the person's own:

  claude-code  --project  .mcp.json (mcpServers.agentbox), .claude/settings.json
                          (permissions.allow: mcp__agentbox__*; permissions.deny: Bash
                          Read Write Edit NotebookEdit Glob Grep WebFetch) and
                          .claude/settings.local.json (enabledMcpjsonServers: agentbox;
                          Claude Code still asks once whether to trust the folder)
               --user     ~/.claude.json (mcpServers.agentbox) and ~/.claude/settings.json
  gemini-cli   --project  .gemini/settings.json (mcpServers.agentbox) and
                          .gemini/policies/agentbox.toml (deny its shell, file, search
                          and fetch tools; allow agentbox's); Gemini CLI starts servers
                          only in a folder the person trusts (~/.gemini/trustedFolders.json)
               --user     ~/.gemini/settings.json and ~/.gemini/policies/agentbox.toml
  codex        --project  .codex/config.toml ([mcp_servers.agentbox], with --state-dir
                          and --config when they are not the defaults, since Codex
                          passes no AGENTBOX_* variable; [features] shell_tool = false)
               --user     ~/.codex/config.toml
  cursor       --project  .cursor/mcp.json (mcpServers.agentbox) and .cursor/cli.json
                          (permissions.deny: Shell(*) Write(**) Read(**), for the Cursor CLI)
               --user     ~/.cursor/mcp.json and ~/.cursor/cli-config.json

A project entry names the workspace (--workspace, default the current
directory); a user entry serves whatever directory the client runs in. These
files are protected paths for agents (an agent cannot change them through
agentbox); setup is for the person at the host. docs/clients.md says what
each client still asks of you.

--http URL points the client at a running "agentbox mcp --http" instead, with
the bearer token every request needs: Claude Code runs "agentbox mcp token
--header" for it (headersHelper; rotation is picked up by itself); for the
others --user writes the token into the file (made 0600) and --project names
the variable AGENTBOX_MCP_TOKEN instead (a project file is no place for it).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: setupClients,
		RunE: func(cmd *cobra.Command, args []string) error {
			if project && user {
				return errors.New("--project and --user exclude each other")
			}
			if !slices.Contains(setupClients, args[0]) {
				return fmt.Errorf("unknown client %q: want one of %s", args[0], strings.Join(setupClients, ", "))
			}
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			if command == "" {
				if command, err = agentboxCommand(); err != nil {
					return err
				}
			}
			t := setupTarget{client: args[0], user: user, ws: cfg.Workspace, home: home, command: command}
			if cfg.StateDirNote == "" && cfg.StateDir != filepath.Join(home, ".local", "state", "agentbox") {
				t.stateDir = cfg.StateDir
			}
			if cfg.Engine.Host == "" {
				t.dockerHost = os.Getenv("DOCKER_HOST")
			}
			if cfg.File != "" && cfg.File != filepath.Join(home, ".config", "agentbox", "config.yaml") {
				if t.configFile, err = filepath.Abs(cfg.File); err != nil {
					return err
				}
			}
			if httpURL != "" {
				return runSetupHTTP(a, t, cfg, httpURL, dryRun)
			}
			return runSetup(a, t, dryRun)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&project, "project", false, "write the workspace's config files (the default)")
	f.BoolVar(&user, "user", false, "write the person's own config files instead")
	f.BoolVar(&dryRun, "dry-run", false, "print the changes, write nothing")
	f.StringVar(&command, "command", "", "the agentbox binary the client starts (default: this one's absolute path)")
	f.StringVar(&httpURL, "http", "", "point the client at a running `agentbox mcp --http` at URL, with its bearer token")
	return cmd
}

// agentboxCommand is the absolute path of this binary, or "agentbox" when
// it runs from a temporary build (go run).
func agentboxCommand() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "agentbox", nil
	}
	return exe, nil
}

func runSetup(a *app, t setupTarget, dryRun bool) error {
	edits := t.edits()
	out := a.stdout()
	toTerminal := false
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		toTerminal = true
	}
	changed := 0
	for _, e := range edits {
		path, old, mode, err := readConfig(e.path)
		if err != nil {
			return err
		}
		if e.private && config.Within(config.ResolveExisting(path), t.ws) {
			// Sandboxed commands run as the workspace owner and read every
			// file in it: a 0600 file there keeps the token from nobody.
			return fmt.Errorf("%s leads to %s, inside the workspace %s, where sandboxed commands could read the token; nothing was written. Point it outside the workspace, or use --project (the file then names the token through %s)", e.path, config.ResolveExisting(path), t.ws, mcpTokenEnv)
		}
		next, err := e.edit(old)
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was written to it. Add by hand:\n%s", e.path, err, e.manual)
		}
		if bytes.Equal(old, next) {
			fmt.Fprintf(a.stderr(), "agentbox setup: %s already set up\n", termtext.Line(e.path))
			continue
		}
		changed++
		diff := redactTokens(udiff.Unified("a"+e.path, "b"+e.path, string(old), string(next)))
		if toTerminal {
			diff = termtext.Escape(diff)
		}
		fmt.Fprint(out, diff)
		if dryRun {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if e.private {
			mode &^= 0o077
		}
		if err := atomicfile.WriteFile(path, next, mode); err != nil {
			return fmt.Errorf("writing %s: %w", e.path, err)
		}
	}
	switch {
	case changed == 0:
		fmt.Fprintf(a.stderr(), "agentbox setup: %s is already set up; nothing to change\n", t.client)
	case dryRun:
		fmt.Fprintf(a.stderr(), "agentbox setup: dry run: %d file(s) would change; nothing was written\n", changed)
	default:
		fmt.Fprintf(a.stderr(), "agentbox setup: %d file(s) changed for %s\n", changed, t.client)
	}
	if !dryRun {
		for _, n := range t.nextSteps() {
			fmt.Fprintf(a.stderr(), "agentbox setup: next: %s\n", termtext.Line(n))
		}
	}
	return nil
}

// nextSteps is what the client still asks of the person after setup.
func (t setupTarget) nextSteps() []string {
	switch {
	case t.client == "claude-code" && !t.user:
		return []string{"run `claude` here once and trust the folder: until then Claude Code keeps the agentbox server pending and ignores the project's permissions.allow"}
	case t.client == "gemini-cli" && !t.user:
		return []string{fmt.Sprintf("trust this folder in Gemini CLI (it asks on the first `gemini` here; or add {%q: \"TRUST_FOLDER\"} to ~/.gemini/trustedFolders.json), and accept the project's policy file when it asks", t.ws)}
	case t.client == "codex" && !t.user:
		return []string{"Codex reads .codex/config.toml only in a project you trust (`--user` needs no trust)"}
	}
	return nil
}

// readConfig reads a config file, following a symlink to the file it
// names (dotfile managers link them) so that the write replaces that file
// and not the link. A missing file reads as nil with mode 0644.
func readConfig(path string) (real string, data []byte, mode fs.FileMode, err error) {
	real = path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	fi, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return real, nil, 0o644, nil
	}
	if err != nil {
		return "", nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err = os.ReadFile(real)
	return real, data, fi.Mode().Perm(), err
}

// serverArgs are the arguments of agentbox's MCP entry: a project entry
// names its workspace, a user entry serves the client's directory.
func (t setupTarget) serverArgs(workspace string) []string {
	if t.user {
		return []string{"mcp"}
	}
	return []string{"--workspace", workspace, "mcp"}
}

// scrubbedEnvArgs puts before args the global flags a server needs when its
// client starts it with a scrubbed environment (Codex passes on HOME and
// PATH but no AGENTBOX_* or XDG_* variable): the state dir and the config
// file, when they are not the ones found from HOME.
func (t setupTarget) scrubbedEnvArgs(args []string) []string {
	var pre []string
	if t.stateDir != "" {
		pre = append(pre, "--state-dir", t.stateDir)
	}
	if t.configFile != "" {
		pre = append(pre, "--config", t.configFile)
	}
	return append(pre, args...)
}

// in is the path of a config file: below the home directory for --user,
// else below the workspace.
func (t setupTarget) in(userPath, projectPath string) string {
	if t.user {
		return filepath.Join(t.home, userPath)
	}
	return filepath.Join(t.ws, projectPath)
}

func setupEdits(t setupTarget) []configEdit {
	switch t.client {
	case "claude-code":
		entry := mcpEntry(t.command, t.serverArgs(t.ws), "stdio")
		mcpFile := t.in(".claude.json", ".mcp.json")
		settings := t.in(".claude/settings.json", ".claude/settings.json")
		edits := []configEdit{
			{path: mcpFile, edit: jsonEdit(setServer(entry)), manual: manualJSON("mcpServers.agentbox", entry)},
			{path: settings, edit: jsonEdit(func(o *jsonObject) error {
				if err := removeStrings(o, []string{"permissions", "deny"}, claudeObsolete); err != nil {
					return err
				}
				if err := addStrings(o, []string{"permissions", "allow"}, claudeAllow); err != nil {
					return err
				}
				return addStrings(o, []string{"permissions", "deny"}, claudeDeny)
			}), manual: manualList("permissions.allow", claudeAllow) + "\n" + manualList("permissions.deny", claudeDeny)},
		}
		if !t.user {
			// A project's .mcp.json server waits for approval; Claude Code
			// takes it only from a settings file that is not committed
			// (and only once the person trusts the folder).
			edits = append(edits, configEdit{
				path: filepath.Join(t.ws, ".claude", "settings.local.json"),
				edit: jsonEdit(func(o *jsonObject) error {
					return addStrings(o, []string{"enabledMcpjsonServers"}, []string{"agentbox"})
				}),
				manual: manualList("enabledMcpjsonServers", []string{"agentbox"}),
			})
		}
		return edits
	case "gemini-cli":
		entry := mcpEntry(t.command, t.serverArgs(t.ws), "")
		file := t.in(".gemini/settings.json", ".gemini/settings.json")
		edit := jsonEdit(func(o *jsonObject) error {
			if err := setServer(entry)(o); err != nil {
				return err
			}
			// The policy file replaces what setup once excluded here.
			for _, path := range [][]string{{"excludeTools"}, {"tools", "exclude"}} {
				if err := removeStrings(o, path, geminiExcludeObsolete); err != nil {
					return err
				}
				if err := dropEmptyList(o, path); err != nil {
					return err
				}
			}
			return nil
		})
		policy := t.in(".gemini/policies/agentbox.toml", ".gemini/policies/agentbox.toml")
		return []configEdit{
			{path: file, edit: edit, manual: manualJSON("mcpServers.agentbox", entry)},
			{path: policy, edit: func([]byte) ([]byte, error) { return []byte(geminiPolicy), nil }, manual: geminiPolicy},
		}
	case "codex":
		file := t.in(".codex/config.toml", ".codex/config.toml")
		args := t.scrubbedEnvArgs(t.serverArgs(t.ws))
		env := map[string]string{}
		if t.dockerHost != "" {
			env["DOCKER_HOST"] = t.dockerHost
		}
		return []configEdit{{path: file, edit: func(old []byte) ([]byte, error) { return codexEdit(old, t.command, args, env) }, manual: codexBlock(t.command, args, env)}}
	case "cursor":
		args := t.serverArgs("${workspaceFolder}")
		entry := mcpEntry(t.command, args, "")
		cli := t.in(".cursor/cli-config.json", ".cursor/cli.json")
		cliEdit := jsonEdit(func(o *jsonObject) error {
			if t.user && len(o.keys) == 0 {
				// cli-config.json has required fields; a new one gets them.
				o.set("version", jsonNumber("1"))
				ed := newJSONObject()
				ed.set("vimMode", false)
				o.set("editor", ed)
				p := newJSONObject()
				p.set("allow", []any{})
				o.set("permissions", p)
			}
			return addStrings(o, []string{"permissions", "deny"}, cursorDeny)
		})
		return []configEdit{
			{path: t.in(".cursor/mcp.json", ".cursor/mcp.json"), edit: jsonEdit(setServer(entry)), manual: manualJSON("mcpServers.agentbox", entry)},
			{path: cli, edit: cliEdit, manual: manualList("permissions.deny", cursorDeny)},
		}
	}
	return nil
}

// geminiPolicy is the Gemini CLI Policy Engine file setup owns whole: the
// native tools that reach the host are denied, agentbox's own run without
// Gemini CLI asking first (agentbox decides, and asks where it must).
var geminiPolicy = `# Written by ` + "`agentbox setup gemini-cli`" + `; running it again rewrites this file.
# Gemini CLI's own shell, file and fetch tools run on the host: the agent
# uses agentbox's (contained, judged, undoable) instead.
[[rule]]
toolName = ` + tomlStrings(geminiDeny) + `
decision = "deny"
priority = 900
denyMessage = "Use the agentbox tools (Bash, Read, Write, Edit, Glob, Grep, LS) instead: they run contained and every change can be undone."

# agentbox's tools: agentbox itself decides what needs a person's approval.
[[rule]]
mcpName = "agentbox"
toolName = "*"
decision = "allow"
priority = 900
`

// mcpEntry is agentbox's stdio server entry; typ ("stdio") is written only
// for clients that take it.
func mcpEntry(command string, args []string, typ string) *jsonObject {
	e := newJSONObject()
	if typ != "" {
		e.set("type", typ)
	}
	e.set("command", command)
	e.set("args", strList(args))
	return e
}

// setServer sets mcpServers.agentbox's fields to entry's, keeping any
// other field a person added (env, timeout, ...).
func setServer(entry *jsonObject) func(*jsonObject) error {
	return func(o *jsonObject) error {
		servers, err := objectAt(o, "mcpServers")
		if err != nil {
			return err
		}
		cur, ok := servers.get("agentbox")
		if !ok || cur == nil {
			servers.set("agentbox", entry)
			return nil
		}
		obj, ok := cur.(*jsonObject)
		if !ok {
			return errors.New("mcpServers.agentbox is not a JSON object")
		}
		for _, k := range entry.keys {
			obj.set(k, entry.vals[k])
		}
		return nil
	}
}

// jsonEdit parses the file, applies fn and encodes the result; when the
// result means the same as the file it returns the file unchanged, so a
// second run does not even reformat it.
func jsonEdit(fn func(*jsonObject) error) func([]byte) ([]byte, error) {
	return func(old []byte) ([]byte, error) {
		o, err := parseJSONObject(old)
		if err != nil {
			return nil, fmt.Errorf("not plain JSON (%v)", err)
		}
		before := encodeJSON(o)
		if err := fn(o); err != nil {
			return nil, err
		}
		after := encodeJSON(o)
		if old != nil && bytes.Equal(before, after) {
			return old, nil
		}
		return after, nil
	}
}

func jsonNumber(s string) any {
	o, _ := parseJSONObject([]byte(`{"n":` + s + `}`))
	v, _ := o.get("n")
	return v
}

func manualJSON(key string, v any) string {
	return fmt.Sprintf("  %s = %s", key, strings.TrimSpace(string(encodeJSON(v))))
}

func manualList(key string, items []string) string {
	return fmt.Sprintf("  %s += %s", key, strings.TrimSpace(string(encodeJSON(strList(items)))))
}

// tomlHeader matches a TOML table header line ([a.b], not [[array]]).
var tomlHeader = regexp.MustCompile(`^\s*\[([^\[\]]+)\]\s*(#.*)?$`)

// tomlKeyLine matches the start of a `key = value` line.
func tomlKeyLine(key string) *regexp.Regexp {
	return regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
}

func tomlString(s string) string {
	var b bytes.Buffer
	writeJSONString(&b, s) // JSON's escapes are valid in a TOML basic string
	return b.String()
}

func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func codexBlock(command string, args []string, env map[string]string) string {
	envLine := ""
	if len(env) > 0 {
		envLine = "env = " + tomlInlineTable(env) + "\n"
	}
	return fmt.Sprintf("[mcp_servers.agentbox]\ncommand = %s\nargs = %s\n%s\n[features]\nshell_tool = false\n", tomlString(command), tomlStrings(args), envLine)
}

// tomlInlineTable writes m as a TOML inline table of strings, keys sorted.
func tomlInlineTable(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(m[k])
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// codexEdit sets [mcp_servers.agentbox] command and args and [features]
// shell_tool = false in a Codex config.toml, editing the text so that
// comments and everything else stay as they are. The result is parsed
// back and checked; anything this cannot do safely is an error.
func codexEdit(old []byte, command string, args []string, env map[string]string) ([]byte, error) {
	type server struct {
		Command string            `toml:"command"`
		Args    []string          `toml:"args"`
		Env     map[string]string `toml:"env"`
	}
	var probe struct {
		MCPServers map[string]server `toml:"mcp_servers"`
	}
	if old != nil {
		if err := toml.Unmarshal(old, &probe); err != nil {
			return nil, fmt.Errorf("not valid TOML (%v)", err)
		}
	}
	lines := strings.Split(string(old), "\n")
	if len(old) == 0 {
		lines = nil
	}
	kvs := []tomlKV{{"command", tomlString(command)}, {"args", tomlStrings(args)}}
	if len(env) > 0 {
		// Codex gives the server only these (and HOME, PATH): keep the
		// person's own entries beside ours.
		merged := maps.Clone(probe.MCPServers["agentbox"].Env)
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, env)
		env = merged
		kvs = append(kvs, tomlKV{"env", tomlInlineTable(env)})
	}
	lines = setTOMLKeys(lines, "mcp_servers.agentbox", kvs)
	lines = setTOMLKeys(lines, "features", []tomlKV{{"shell_tool", "false"}})
	out := strings.Join(lines, "\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if old != nil && out == string(old) {
		return old, nil
	}
	var got struct {
		MCPServers map[string]server `toml:"mcp_servers"`
		Features   map[string]any    `toml:"features"`
	}
	if err := toml.Unmarshal([]byte(out), &got); err != nil {
		return nil, fmt.Errorf("the merged file would not be valid TOML (%v)", err)
	}
	srv := got.MCPServers["agentbox"]
	if srv.Command != command || !slices.Equal(srv.Args, args) || got.Features["shell_tool"] != false || (len(env) > 0 && !maps.Equal(srv.Env, env)) {
		return nil, errors.New("its mcp_servers or features are written in a form setup does not edit (dotted keys or inline tables)")
	}
	return []byte(out), nil
}

type tomlKV struct{ key, value string }

// setTOMLKeys sets keys in the table named table, adding the table at the
// end when it is missing. A value spanning lines (a multi-line array) is
// replaced whole.
func setTOMLKeys(lines []string, table string, kvs []tomlKV) []string {
	start := -1
	for i, l := range lines {
		if m := tomlHeader.FindStringSubmatch(l); m != nil && normTOMLKey(m[1]) == table {
			start = i
			break
		}
	}
	if start < 0 {
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, "["+table+"]")
		for _, kv := range kvs {
			lines = append(lines, kv.key+" = "+kv.value)
		}
		return append(lines, "")
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "[") && !tomlValueContinues(lines, i) {
			end = i
			break
		}
	}
	body := slices.Clone(lines[start+1 : end])
	for _, kv := range kvs {
		re := tomlKeyLine(kv.key)
		found := false
		for i := 0; i < len(body); i++ {
			if !re.MatchString(body[i]) {
				continue
			}
			j := i + 1
			if v := strings.TrimSpace(strings.SplitN(body[i], "=", 2)[1]); strings.HasPrefix(v, "[") && !strings.Contains(v, "]") {
				for j < len(body) && !strings.Contains(body[j], "]") {
					j++
				}
				if j < len(body) {
					j++
				}
			}
			body = slices.Replace(body, i, j, kv.key+" = "+kv.value)
			found = true
			break
		}
		if !found {
			// After the last key line, before trailing blank lines.
			at := len(body)
			for at > 0 && strings.TrimSpace(body[at-1]) == "" {
				at--
			}
			body = slices.Insert(body, at, kv.key+" = "+kv.value)
		}
	}
	out := slices.Clone(lines[:start+1])
	out = append(out, body...)
	return append(out, lines[end:]...)
}

// tomlValueContinues reports whether line i, which starts with "[", is an
// element of a multi-line array rather than a table header.
func tomlValueContinues(lines []string, i int) bool {
	return tomlHeader.FindStringSubmatch(lines[i]) == nil && !strings.HasPrefix(strings.TrimSpace(lines[i]), "[[")
}

// normTOMLKey drops blanks and quotes from a dotted table name.
func normTOMLKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}
