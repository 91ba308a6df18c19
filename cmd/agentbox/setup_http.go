package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/frontdoor"
)

// `agentbox setup CLIENT --http URL` points a client at a running
// `agentbox mcp --http` instead of starting agentbox over stdio, and gives
// it the bearer token every request needs, in the form that client reads:
//
//	claude-code  "type": "http", "url", and "headersHelper": a command
//	             (`agentbox mcp token --header`) Claude Code runs for the
//	             headers, and runs again after a 401; no token in any file,
//	             and a rotation is picked up by itself.
//	codex        url and http_headers_helper = the same command (Codex runs
//	             it when it connects); no token in any file either.
//	gemini-cli   "httpUrl" and "headers": {"Authorization": "Bearer …"}
//	cursor       "url" and "headers": {"Authorization": "Bearer …"}
//
// For Gemini CLI and Cursor, which have no header helper, --user writes
// the token into the person's own file, which is then made 0600; with
// --project the file sits in the workspace (shared, often committed,
// readable by other accounts), so it never holds the token: it names the
// environment variable AGENTBOX_MCP_TOKEN (${AGENTBOX_MCP_TOKEN},
// ${env:…}) and setup says how to set it.

// mcpTokenEnv is the variable project entries name for the token.
const mcpTokenEnv = "AGENTBOX_MCP_TOKEN"

// httpTarget is what an HTTP entry needs.
type httpTarget struct {
	url    string
	token  string // the literal token (user files only)
	helper string // the command printing the headers (Claude Code)
}

// transportKeys are the fields of a server entry that say how to reach
// it; an HTTP entry replaces all of them, so that no stdio "command" is
// left next to a "url".
var transportKeys = []string{"type", "command", "args", "env", "cwd", "url", "httpUrl", "headers", "headersHelper"}

// checkMCPURL validates the --http URL; an empty path becomes /mcp.
func checkMCPURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--http %q: want the server's URL, e.g. http://127.0.0.1:8787/mcp", raw)
	}
	if u.User != nil || u.RawQuery != "" {
		return "", fmt.Errorf("--http %q: the URL must not carry credentials or a query; setup writes the token as a header", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}

// edits are the config edits for t: the stdio entry, or an HTTP one.
func (t setupTarget) edits() []configEdit {
	if t.http == nil {
		return setupEdits(t)
	}
	return httpSetupEdits(t)
}

// httpSetupEdits are setupEdits with the server entry turned into an HTTP
// one: the first edit of every client writes its server entry (and, for
// Gemini CLI and Codex, its tool settings too); the HTTP entry is applied
// on top of it, so the tool settings stay the same as for stdio.
func httpSetupEdits(t setupTarget) []configEdit {
	edits := setupEdits(t)
	first := &edits[0]
	stdio := first.edit
	var then func([]byte) ([]byte, error)
	var manual string
	h := t.http
	bearer := "Bearer " + h.token
	switch t.client {
	case "claude-code":
		e := newJSONObject()
		e.set("type", "http")
		e.set("url", h.url)
		e.set("headersHelper", h.helper)
		then, manual = jsonEdit(replaceServer(e)), manualJSON("mcpServers.agentbox", e)
	case "gemini-cli", "cursor":
		urlKey, ref := "url", "Bearer ${env:"+mcpTokenEnv+"}"
		if t.client == "gemini-cli" {
			urlKey, ref = "httpUrl", "Bearer ${"+mcpTokenEnv+"}"
		}
		if !t.user {
			bearer = ref
		}
		entry := func(auth string) *jsonObject {
			e, hd := newJSONObject(), newJSONObject()
			e.set(urlKey, h.url)
			hd.set("Authorization", auth)
			e.set("headers", hd)
			return e
		}
		then = jsonEdit(replaceServer(entry(bearer)))
		manual = redactTokens(manualJSON("mcpServers.agentbox", entry(bearer)))
	case "codex":
		kv := []tomlKV{{"url", tomlString(h.url)}, {"http_headers_helper", tomlString(h.helper)}}
		then = func(old []byte) ([]byte, error) { return codexHTTPEdit(old, kv, h) }
		manual = "[mcp_servers.agentbox]\n" + kv[0].key + " = " + kv[0].value + "\n" + kv[1].key + " = " + kv[1].value
	}
	first.edit = func(old []byte) ([]byte, error) {
		mid, err := stdio(old)
		if err != nil {
			return nil, err
		}
		next, err := then(mid)
		if err != nil {
			return nil, err
		}
		if string(next) == string(old) {
			return old, nil
		}
		return next, nil
	}
	first.manual = manual
	first.private = h.token != ""
	return edits
}

// replaceServer sets mcpServers.agentbox to entry's transport: setServer,
// then the transport fields entry does not have are dropped; the others
// a person added (timeout, trust, ...) stay.
func replaceServer(entry *jsonObject) func(*jsonObject) error {
	set := setServer(entry)
	return func(o *jsonObject) error {
		if err := set(o); err != nil {
			return err
		}
		servers, err := objectAt(o, "mcpServers")
		if err != nil {
			return err
		}
		cur, _ := servers.get("agentbox")
		obj := cur.(*jsonObject) // setServer made it one or failed
		for _, k := range transportKeys {
			if _, keep := entry.get(k); !keep {
				obj.del(k)
			}
		}
		return nil
	}
}

// del removes key k.
func (o *jsonObject) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(s string) bool { return s == k })
}

// codexTransportKeys are the transport fields of a Codex server table.
var codexTransportKeys = []string{"command", "args", "cwd", "env", "env_vars", "url", "http_headers", "env_http_headers", "bearer_token_env_var", "http_headers_helper"}

// dropMark marks a line setTOMLKeys wrote only so that it can be removed
// (setTOMLKeys replaces a multi-line value whole).
const dropMark = "\"\x00drop\""

// codexHTTPEdit sets the HTTP transport kv in [mcp_servers.agentbox],
// removing the other transport keys, and checks the result.
func codexHTTPEdit(old []byte, kv []tomlKV, h *httpTarget) ([]byte, error) {
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	for _, k := range codexTransportKeys {
		lines = setTOMLKeys(lines, "mcp_servers.agentbox", []tomlKV{{k, dropMark}})
		lines = slices.DeleteFunc(lines, func(l string) bool { return l == k+" = "+dropMark })
	}
	lines = setTOMLKeys(lines, "mcp_servers.agentbox", kv)
	out := strings.Join(lines, "\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	var got struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(out), &got); err != nil {
		return nil, fmt.Errorf("the merged file would not be valid TOML (%v)", err)
	}
	srv := got.MCPServers["agentbox"]
	if srv["url"] != h.url || srv["http_headers_helper"] != h.helper || srv["command"] != nil {
		return nil, errors.New("its mcp_servers table is written in a form setup does not edit (dotted keys or inline tables)")
	}
	return []byte(out), nil
}

// bearerToken matches a bearer token in text setup prints.
var bearerToken = regexp.MustCompile(`(Bearer )[A-Za-z0-9._~+/-]+=*`)

// redactTokens hides bearer tokens in what setup prints (diffs, the text
// to add by hand); references to a variable (${…}) stay readable.
func redactTokens(s string) string { return bearerToken.ReplaceAllString(s, "${1}<token>") }

var clientNames = map[string]string{"claude-code": "Claude Code", "codex": "Codex"}

// httpSetupNote is what the person still has to do after an HTTP setup.
func httpSetupNote(t setupTarget, tokenPath string) string {
	switch {
	case t.client == "claude-code" || t.client == "codex":
		return clientNames[t.client] + " asks `" + t.http.helper + "` for the header when it connects, so the token is in no config file and a rotated one is picked up."
	case t.user:
		return "The file holds the token (it was made 0600). After `agentbox mcp token rotate`, run this setup again."
	default:
		return fmt.Sprintf("The project file names the token through %s and never holds it: start %s with it set, e.g.\n  export %s=\"$(cat %s)\"", mcpTokenEnv, t.client, mcpTokenEnv, shellQuote(tokenPath))
	}
}

// runSetupHTTP is runSetup for --http: it gets the token (creating the
// token file on first use) and says what is left to do.
func runSetupHTTP(a *app, t setupTarget, cfg *config.Config, rawURL string, dryRun bool) error {
	u, err := checkMCPURL(rawURL)
	if err != nil {
		return err
	}
	helper := shellQuote(t.command) + " --state-dir " + shellQuote(cfg.StateDir)
	if a.configFile != "" {
		// The client runs the helper in its own directory (the project).
		abs, err := filepath.Abs(a.configFile)
		if err != nil {
			return err
		}
		helper += " --config " + shellQuote(abs)
	}
	// The token file exists from here on, for the helper and the export
	// line too; only a user file gets the token itself.
	tok, err := mcpToken(cfg)
	if err != nil {
		return err
	}
	t.http = &httpTarget{url: u, helper: helper + " mcp token --header"}
	if t.user && (t.client == "gemini-cli" || t.client == "cursor") {
		t.http.token = tok
	}
	if err := runSetup(a, t, dryRun); err != nil {
		return err
	}
	fmt.Fprintln(a.stderr(), "agentbox setup: "+httpSetupNote(t, frontdoor.KeyPath(cfg.StateDir, mcpDoorName)))
	return nil
}
