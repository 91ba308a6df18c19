package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/tools"
	"github.com/agentbox/agentbox/tools/builtin"
	"github.com/agentbox/agentbox/tools/permission"
)

// TestSecretsAskForEveryTool: the secret path rules (tools.secrets) ask
// before any tool reads a secret file — Read, Grep, and a shell command
// naming it literally, through a glob, a symlink or a substitution — in
// the default and the plan mode, over allow rules; searches leave secret
// files out. A Read deny rule refuses a shell command that names a denied
// path, and asks when the path is known only at run time.
func TestSecretsAskForEveryTool(t *testing.T) {
	for _, mode := range []string{"default", "plan"} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Tools.Mode = mode
			cfg.Tools.Allow = []string{"Bash(cat:*)", "Bash(head:*)", "Read"}
			cfg.Tools.Deny = append(cfg.Tools.Deny, "Read(./private/**)")
			ws := cfg.Workspace
			for name, content := range map[string]string{
				".env": "TOKEN=s3cr3t\n", "sub/.env.local": "KEY=s3cr3t\n", "a.go": "package a\n",
				"certs/server.pem": "s3cr3t\n", "private/k": "s3cr3t\n", "notes.txt": "no secret here\n",
			} {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
				if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			must(t, os.Symlink(".env", filepath.Join(ws, "innocent")))
			must(t, os.Mkdir(filepath.Join(ws, "links"), 0o755))
			must(t, os.Symlink("../.env", filepath.Join(ws, "links", "innocent")))
			var mu sync.Mutex
			var asked []tools.ApprovalRequest
			ap := tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.Approval, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, r)
				return tools.Approval{Allow: false, By: "test"}, nil
			})
			ctx := context.Background()
			sys, err := Open(ctx, cfg, Options{Register: builtin.Register, Runner: sandboxtest.NewFake(ws), Approver: ap})
			if err != nil {
				t.Fatal(err)
			}
			defer sys.Close(ctx)
			sess, _ := sys.Sessions.Load("t")
			run := func(tool string, in any) tools.Response {
				b, _ := json.Marshal(in)
				return sys.Pipeline.Run(ctx, tools.Request{Session: sess, Tool: tool, Input: b})
			}
			bash := func(cmd string) map[string]string { return map[string]string{"command": cmd} }
			for _, tc := range []struct {
				tool string
				in   any
				rule string
			}{
				{"Bash", bash("cat .env"), "Read(.env*)"},
				{"Bash", bash("cat .e*"), "Read(.env*)"},
				{"Bash", bash("cat .[e]nv"), "Read(.env*)"},
				{"Bash", bash("head -c 999 .en?"), "Read(.env*)"},
				{"Bash", bash("cat $(ls -a | grep env)"), "Read("},
				{"Bash", bash("xxd .env"), "Read(.env*)"},
				{"Bash", bash("cat -- certs/*.pem"), "Read(*.pem)"},
				{"Bash", bash("cat sub/.env.*"), "Read(.env*)"},
				{"Bash", bash("cat innocent"), "Read(.env*)"}, // a symlink to .env
				{"Bash", bash("cat /proc/self/cwd/.env"), "Read(.env*)"},
				{"Bash", bash("python3 -c 'print(open(\".env\").read())'"), "Read(.env*)"},
				{"Bash", bash("find . -name '*.go' -exec cat {} +"), "Read("},
				{"Bash", bash("cat certs/*"), "Read(*.pem)"}, // what the directory holds
				{"Bash", bash("cat links/*"), "Read(.env*)"}, // links/innocent -> ../.env
				{"Bash", bash("cat $(echo private/k)"), "Read(./private/**)"},
				{"Read", map[string]string{"file_path": filepath.Join(ws, ".env")}, "Read(.env*)"},
				{"Read", map[string]string{"file_path": filepath.Join(ws, "sub/.env.local")}, "Read(.env*)"},
				{"Read", map[string]string{"file_path": filepath.Join(ws, "innocent")}, "Read(.env*)"},
				{"Grep", map[string]string{"pattern": "s3cr3t", "path": filepath.Join(ws, ".env")}, "Read(.env*)"},
			} {
				mu.Lock()
				asked = nil
				mu.Unlock()
				r := run(tc.tool, tc.in)
				if r.Err == nil || strings.Contains(r.Content, "s3cr3t") {
					t.Errorf("%s %v ran: %+v", tc.tool, tc.in, r)
					continue
				}
				if mode == "plan" && tc.tool == "Bash" && r.Err.Kind == tools.ErrPermissionDenied && len(asked) == 0 {
					continue // plan mode refuses what the classifier cannot prove read-only
				}
				if len(asked) != 1 || !strings.Contains(asked[0].Reason, tc.rule) {
					t.Errorf("%s %v: asked %+v, want one question naming %s (result %+v)", tc.tool, tc.in, asked, tc.rule, r.Err)
				}
			}
			// A Read deny rule refuses a shell command naming a denied path.
			for _, cmd := range []string{"cat private/k", "cat priv*/k", "head private/[k]"} {
				r := run("Bash", bash(cmd))
				if r.Err == nil || r.Err.Kind != tools.ErrPermissionDenied || !strings.Contains(r.Err.Message, "Read(./private/**)") {
					t.Errorf("%q: %+v, want refused by Read(./private/**)", cmd, r.Err)
				}
			}
			// Searches leave secret files out; other files are found.
			r := run("Grep", map[string]any{"pattern": "s3cr3t|no secret", "path": ws, "output_mode": "content"})
			if r.Err != nil || strings.Contains(r.Content, "s3cr3t") || !strings.Contains(r.Content, "no secret here") {
				t.Errorf("Grep over the workspace: %+v", r)
			}
			// What cannot name a secret is not asked about.
			mu.Lock()
			asked = nil
			mu.Unlock()
			for _, cmd := range []string{"cat a.go notes.txt", "cat sub/*"} {
				if r := run("Bash", bash(cmd)); len(asked) != 0 || r.Err != nil && r.Err.Kind == tools.ErrPermissionDenied {
					t.Errorf("%s: asked %+v, result %+v", cmd, asked, r.Err)
				}
			}
		})
	}
}

// TestSecretRulesAreAskRules: tools.secrets becomes ask rules Read(entry)
// of Source permission.SecretSource, and a bad entry is refused.
func TestSecretRulesAreAskRules(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools.Secrets = []string{".env", "*.pem"}
	sys, err := Open(context.Background(), cfg, Options{Register: builtin.Register})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(context.Background())
	var got []string
	for _, r := range sys.Rules.Ask {
		if r.Source == permission.SecretSource {
			got = append(got, r.Raw)
		}
	}
	if strings.Join(got, " ") != "Read(.env) Read(*.pem)" {
		t.Errorf("secret ask rules = %q", got)
	}
	if _, err := SecretRules([]string{"["}); err == nil {
		t.Error("a bad secret entry was accepted")
	}
}
