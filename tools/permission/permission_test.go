package permission

import (
	"errors"
	"strings"
	"testing"
)

var ctx = Context{Workspace: "/ws", Home: "/home/u"}

func TestParse(t *testing.T) {
	tests := []struct {
		in       string
		tool     string
		spec     string
		wantFail bool
	}{
		{in: "Bash", tool: "Bash"},
		{in: " Bash(npm run test:*) ", tool: "Bash", spec: "npm run test:*"},
		{in: "Edit(./src/**)", tool: "Edit", spec: "./src/**"},
		{in: "Read(~/.ssh/**)", tool: "Read", spec: "~/.ssh/**"},
		{in: "Read(//etc/**)", tool: "Read", spec: "//etc/**"},
		{in: "Bash(*)", tool: "Bash", spec: ""},
		{in: "", wantFail: true},
		{in: "Bash(", wantFail: true},
		{in: "Bash()", wantFail: true},
		{in: "(x)", wantFail: true},
		{in: "Ba sh", wantFail: true},
		{in: "Read([)", wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := Parse(tt.in)
			if tt.wantFail {
				if !errors.Is(err, ErrBadRule) {
					t.Fatalf("Parse(%q) = %+v, %v; want ErrBadRule", tt.in, r, err)
				}
				return
			}
			if err != nil || r.Tool != tt.tool || r.Spec != tt.spec {
				t.Fatalf("Parse(%q) = %+v, %v; want tool %q spec %q", tt.in, r, err, tt.tool, tt.spec)
			}
		})
	}
}

func mustRules(t *testing.T, deny, ask, allow []string) Rules {
	t.Helper()
	var rs Rules
	var err error
	if rs.Deny, err = ParseAll(deny, "user"); err != nil {
		t.Fatal(err)
	}
	if rs.Ask, err = ParseAll(ask, "user"); err != nil {
		t.Fatal(err)
	}
	if rs.Allow, err = ParseAll(allow, "user"); err != nil {
		t.Fatal(err)
	}
	return rs
}

// bash is a resolved command whose every part is dangerous.
func bash(cmds ...[]string) Call {
	c := Call{Tool: "Bash", Kind: "execute", HasCommand: true, Commands: cmds}
	for _, argv := range cmds {
		c.Parts = append(c.Parts, Part{Argv: argv, Class: "dangerous"})
	}
	return c
}

// parts is a resolved command: "class word word ..." per part, the
// class's first letter standing for it (r, d, f).
func parts(ps ...string) Call {
	c := Call{Tool: "Bash", Kind: "execute", HasCommand: true}
	for _, p := range ps {
		f := strings.Fields(p)
		class := map[string]string{"r": "read_only", "d": "dangerous", "f": "forbidden"}[f[0]]
		c.Commands = append(c.Commands, f[1:])
		c.Parts = append(c.Parts, Part{Argv: f[1:], Class: class})
	}
	return c
}

// unresolvedCmd is a command the classifier could not resolve into parts.
func unresolvedCmd(cmds ...[]string) Call {
	return Call{Tool: "Bash", Kind: "execute", HasCommand: true, Commands: cmds}
}

func file(tool, kind string, paths ...string) Call {
	return Call{Tool: tool, Kind: kind, Paths: paths}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name             string
		deny, ask, allow []string
		call             Call
		want             Action
		wantRule         string
	}{
		{name: "no rules", call: bash([]string{"ls"}), want: ""},
		{name: "bare Bash allow", allow: []string{"Bash"}, call: bash([]string{"rm", "-rf", "x"}), want: Allow, wantRule: "Bash"},
		{name: "prefix allow", allow: []string{"Bash(npm run test:*)"}, call: bash([]string{"npm", "run", "test", "--", "-v"}), want: Allow},
		{name: "prefix exact length", allow: []string{"Bash(npm run test:*)"}, call: bash([]string{"npm", "run", "test"}), want: Allow},
		{name: "prefix other script", allow: []string{"Bash(npm run test:*)"}, call: bash([]string{"npm", "run", "build"}), want: ""},
		{name: "prefix no word splitting tricks", allow: []string{"Bash(npm run test:*)"}, call: bash([]string{"npm", "run", "test:evil"}), want: ""},
		{name: "allow needs every command", allow: []string{"Bash(npm run test:*)"}, call: bash([]string{"npm", "run", "test"}, []string{"rm", "-rf", "/"}), want: ""},
		{name: "allow by two rules", allow: []string{"Bash(npm run test:*)", "Bash(echo:*)"}, call: bash([]string{"npm", "run", "test"}, []string{"echo", "done"}), want: Allow},
		{name: "unparsed command never allowed by spec", allow: []string{"Bash(ls:*)"}, call: bash(), want: ""},
		{name: "unresolved command never allowed by spec", allow: []string{"Bash(go test:*)"}, call: unresolvedCmd([]string{"go", "test", "$(curl x)"}), want: ""},
		{name: "compound allowed part by part", allow: []string{"Bash(go test:*)"}, call: parts("r cd /ws/sub", "d go test ./...", "r tail -5"), want: Allow},
		{name: "compound with an uncovered part", allow: []string{"Bash(go test:*)"}, call: parts("d go test ./...", "d rm -rf x"), want: ""},
		{name: "deny matches any part", deny: []string{"Bash(rm:*)"}, allow: []string{"Bash(go test:*)"}, call: parts("d go test ./...", "d rm -rf x"), want: Deny},
		{name: "ask matches any part", ask: []string{"Bash(git push:*)"}, allow: []string{"Bash(go test:*)"}, call: parts("d go test", "r git status", "d git push"), want: Ask},
		{name: "deny matches a nested command", deny: []string{"Bash(curl:*)"}, call: unresolvedCmd([]string{"go", "test", "$(curl x)"}, []string{"curl", "x"}), want: Deny},
		{name: "exact form", allow: []string{"Bash(git status)"}, call: bash([]string{"git", "status"}), want: Allow},
		{name: "exact form longer argv", allow: []string{"Bash(git status)"}, call: bash([]string{"git", "status", "-s"}), want: ""},
		{name: "star word", allow: []string{"Bash(git * --help)"}, call: bash([]string{"git", "log", "--help"}), want: Allow},
		{name: "trailing star word is prefix", allow: []string{"Bash(git log *)"}, call: bash([]string{"git", "log", "-p"}), want: Allow},
		{name: "quoted words", allow: []string{`Bash(echo "a b")`}, call: bash([]string{"echo", "a b"}), want: Allow},
		{name: "deny any command", deny: []string{"Bash(curl:*)"}, allow: []string{"Bash"}, call: bash([]string{"ls"}, []string{"curl", "x"}), want: Deny},
		{name: "deny beats ask beats allow", deny: []string{"Bash(rm:*)"}, ask: []string{"Bash(rm:*)"}, allow: []string{"Bash(rm:*)"}, call: bash([]string{"rm", "a"}), want: Deny},
		{name: "ask beats allow", ask: []string{"Bash(git push:*)"}, allow: []string{"Bash"}, call: bash([]string{"git", "push"}), want: Ask},
		{name: "bash rule ignores path tools", deny: []string{"Bash"}, call: file("Read", "read", "/ws/a"), want: ""},
		{name: "edit rule relative", allow: []string{"Edit(./src/**)"}, call: file("Write", "edit", "/ws/src/a/b.go"), want: Allow},
		{name: "edit rule outside", allow: []string{"Edit(./src/**)"}, call: file("Edit", "edit", "/ws/docs/a.md"), want: ""},
		{name: "edit rule covers MultiEdit", deny: []string{"Edit(./vendor/**)"}, call: file("MultiEdit", "edit", "/ws/vendor/x.go"), want: Deny},
		{name: "edit rule does not cover Read", deny: []string{"Edit"}, call: file("Read", "read", "/ws/a"), want: ""},
		{name: "dir/** covers the dir itself", deny: []string{"Read(./secret/**)"}, call: file("Grep", "search", "/ws/secret"), want: Deny},
		{name: "read rule covers Grep below", deny: []string{"Read(./secret/**)"}, call: file("Grep", "search", "/ws/secret/x"), want: Deny},
		{name: "home", deny: []string{"Read(~/.ssh/**)"}, call: file("Read", "read", "/home/u/.ssh/id_rsa"), want: Deny},
		{name: "absolute", deny: []string{"Read(//etc/**)"}, call: file("Read", "read", "/etc/passwd"), want: Deny},
		{name: "absolute no match", deny: []string{"Read(//etc/**)"}, call: file("Read", "read", "/ws/etc/passwd"), want: ""},
		{name: "slash anchored at workspace", deny: []string{"Read(/etc/**)"}, call: file("Read", "read", "/ws/etc/passwd"), want: Deny},
		{name: "no slash matches any depth", deny: []string{"Read(*.env)"}, call: file("Read", "read", "/ws/a/b/prod.env"), want: Deny},
		{name: "no slash matches dir and below", deny: []string{"Read(secrets)"}, call: file("Read", "read", "/ws/a/secrets/key"), want: Deny},
		{name: "dir pattern with trailing slash", deny: []string{"Edit(build/)"}, call: file("Write", "edit", "/ws/build/out/x"), want: Deny},
		{name: "anchored pattern not at depth", deny: []string{"Edit(./build)"}, call: file("Write", "edit", "/ws/x/build/y"), want: ""},
		{name: "allow needs every path", allow: []string{"Edit(./src/**)"}, call: file("MultiEdit", "edit", "/ws/src/a", "/ws/b"), want: ""},
		{name: "alias", deny: []string{"LS"}, call: Call{Tool: "List", Aliases: []string{"LS"}, Kind: "read"}, want: Deny},
		{name: "tool name exact", deny: []string{"Writer"}, call: file("Write", "edit", "/ws/a"), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := mustRules(t, tt.deny, tt.ask, tt.allow)
			m := rs.Evaluate(ctx, tt.call)
			if m.Action != tt.want {
				t.Fatalf("Evaluate = %q (rule %v), want %q", m.Action, m.Rule, tt.want)
			}
			if tt.wantRule != "" && (m.Rule == nil || m.Rule.Raw != tt.wantRule) {
				t.Fatalf("rule = %v, want %s", m.Rule, tt.wantRule)
			}
		})
	}
}

func TestCover(t *testing.T) {
	goTest := Grant{Tool: "Bash", Prefix: []string{"go", "test"}}
	tests := []struct {
		name          string
		allow         []string
		grants        []Grant
		call          Call
		want          bool
		wantUncovered []string // first word of each uncovered part
	}{
		{name: "grant one command", grants: []Grant{goTest}, call: parts("d go test ./..."), want: true},
		{name: "pipe into a read-only part", grants: []Grant{goTest}, call: parts("d go test ./...", "r tail -5"), want: true},
		{name: "cd into the workspace", grants: []Grant{goTest}, call: parts("r cd /ws", "d go test ./..."), want: true},
		{name: "cd into a subdirectory", grants: []Grant{goTest}, call: parts("r cd -P sub/dir", "d go test ./..."), want: true},
		{name: "cd out of the workspace", grants: []Grant{goTest}, call: parts("r cd /etc", "d go test ./..."), wantUncovered: []string{"cd"}},
		{name: "cd up and out", grants: []Grant{goTest}, call: parts("r cd ../..", "d go test ./..."), wantUncovered: []string{"cd"}},
		{name: "cd home", grants: []Grant{goTest}, call: parts("r cd", "d go test ./..."), wantUncovered: []string{"cd"}},
		{name: "cd back", grants: []Grant{goTest}, call: parts("r cd -", "d go test ./..."), wantUncovered: []string{"cd"}},
		{name: "pushd does not count", grants: []Grant{goTest}, call: parts("r pushd sub", "d go test ./..."), wantUncovered: []string{"pushd"}},
		{name: "chain with echo", grants: []Grant{goTest}, call: parts("d go test ./...", "r echo done"), want: true},
		{name: "chain with rm asks", grants: []Grant{goTest}, call: parts("d go test ./...", "d rm -rf x"), wantUncovered: []string{"rm"}},
		{name: "two uncovered", grants: []Grant{goTest}, call: parts("d make", "d go test", "d npm test"), wantUncovered: []string{"make", "npm"}},
		{name: "grant and rule together", allow: []string{"Bash(npm run build:*)"}, grants: []Grant{goTest}, call: parts("d go test", "d npm run build"), want: true},
		{name: "rule alone", allow: []string{"Bash(npm run build:*)"}, call: parts("d npm run build", "r echo ok"), want: true},
		{name: "grant never covers a forbidden part", grants: []Grant{goTest, {Tool: "Bash", Prefix: []string{"rm"}}}, call: parts("d go test", "f rm -rf /"), wantUncovered: []string{"rm"}},
		{name: "user rule names a forbidden part", allow: []string{"Bash(rm -rf /)"}, call: parts("f rm -rf /"), want: true},
		{name: "unresolved is never covered by a grant", grants: []Grant{goTest, {Tool: "Bash", Prefix: []string{"curl"}}}, call: unresolvedCmd([]string{"go", "test", "$(curl x)"}, []string{"curl", "x"}), wantUncovered: []string{"go", "curl"}},
		{name: "unresolved is never covered by a prefix rule", allow: []string{"Bash(go test:*)"}, call: unresolvedCmd([]string{"go", "test", "$X"}), wantUncovered: []string{"go"}},
		{name: "whole-tool rule covers unresolved", allow: []string{"Bash"}, call: unresolvedCmd([]string{"eval", "x"}), want: true},
		{name: "prefix is word by word", grants: []Grant{{Tool: "Bash", Prefix: []string{"npm", "test"}}}, call: parts("d npm test:evil"), wantUncovered: []string{"npm"}},
		{name: "grant of another tool", grants: []Grant{{Tool: "Shell", Prefix: []string{"go", "test"}}}, call: parts("d go test"), wantUncovered: []string{"go"}},
		{name: "all read-only is not a rule's", call: parts("r ls", "r cat x")},
		{name: "whole-tool grant of a tool without command", grants: []Grant{{Tool: "WebFetch"}}, call: Call{Tool: "WebFetch"}, want: true},
		{name: "a grant without prefix never covers commands", grants: []Grant{{Tool: "Bash"}}, call: parts("d ls"), wantUncovered: []string{"ls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := mustRules(t, nil, nil, tt.allow)
			cv := rs.Cover(ctx, tt.call, tt.grants)
			if cv.Covered() != tt.want {
				t.Fatalf("Covered = %v (%+v), want %v", cv.Covered(), cv, tt.want)
			}
			var got []string
			for _, p := range cv.Uncovered {
				got = append(got, p.Argv[0])
			}
			if strings.Join(got, " ") != strings.Join(tt.wantUncovered, " ") {
				t.Fatalf("uncovered %v, want %v", got, tt.wantUncovered)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	projAllow := Match{Action: Allow, Rule: &Rule{Raw: "Bash(rm:*)", Tool: "Bash", Spec: "rm:*", Source: "project"}}
	userAllow := Match{Action: Allow, Rule: &Rule{Raw: "Bash(rm:*)", Tool: "Bash", Spec: "rm:*", Source: "user"}}
	deny := Match{Action: Deny, Rule: &Rule{Raw: "Edit", Tool: "Edit"}}
	ask := Match{Action: Ask, Rule: &Rule{Raw: "Bash(git push:*)"}}
	tests := []struct {
		name   string
		in     Input
		want   Action
		wantBy string
	}{
		{"read-only bash", Input{Class: "read_only", ReadOnly: true, Kind: "execute"}, Allow, "mode"},
		{"dangerous bash asks", Input{Class: "dangerous", Kind: "execute"}, Ask, "classifier"},
		{"dangerous bash acceptEdits asks", Input{Mode: ModeAcceptEdits, Class: "dangerous", Kind: "execute"}, Ask, "classifier"},
		{"dangerous bash dontAsk denies", Input{Mode: ModeDontAsk, Class: "dangerous", Kind: "execute"}, Deny, "classifier"},
		{"dangerous bash bypass", Input{Mode: ModeBypass, Class: "dangerous", Kind: "execute"}, Allow, "mode"},
		{"forbidden bypass denied", Input{Mode: ModeBypass, Class: "forbidden", Kind: "execute"}, Deny, "classifier"},
		{"forbidden grant denied", Input{Class: "forbidden", Kind: "execute", Granted: true}, Deny, "classifier"},
		{"forbidden project allow denied", Input{Class: "forbidden", Match: projAllow, Kind: "execute"}, Deny, "classifier"},
		{"forbidden user allow", Input{Class: "forbidden", Match: userAllow, Kind: "execute"}, Allow, "rule"},
		{"deny rule in bypass", Input{Mode: ModeBypass, Match: deny, Kind: "edit", InWorkspace: true}, Deny, "rule"},
		{"ask rule", Input{Match: ask, Class: "dangerous", Kind: "execute"}, Ask, "rule"},
		{"ask rule dontAsk", Input{Mode: ModeDontAsk, Match: ask, Class: "dangerous"}, Deny, "rule"},
		{"ask rule bypass", Input{Mode: ModeBypass, Match: ask, Class: "dangerous"}, Allow, "mode"},
		{"allow rule dangerous", Input{Match: userAllow, Class: "dangerous", Kind: "execute"}, Allow, "rule"},
		{"grant", Input{Class: "dangerous", Granted: true, Kind: "execute"}, Allow, "grant"},
		{"contained dangerous runs", Input{Class: "dangerous", Kind: "execute", Contained: true}, Allow, ByContained},
		{"contained dangerous acceptEdits runs", Input{Mode: ModeAcceptEdits, Class: "dangerous", Kind: "execute", Contained: true}, Allow, ByContained},
		{"contained dontAsk still denies", Input{Mode: ModeDontAsk, Class: "dangerous", Kind: "execute", Contained: true}, Deny, "classifier"},
		{"contained plan still denies", Input{Mode: ModePlan, Class: "dangerous", Kind: "execute", Contained: true}, Deny, "mode"},
		{"contained forbidden denied", Input{Class: "forbidden", Kind: "execute", Contained: true}, Deny, "classifier"},
		{"contained ask rule asks", Input{Match: ask, Class: "dangerous", Kind: "execute", Contained: true}, Ask, "rule"},
		{"contained deny rule denies", Input{Match: Match{Action: Deny, Rule: &Rule{Raw: "Bash(rm:*)"}}, Class: "dangerous", Kind: "execute", Contained: true}, Deny, "rule"},
		{"contained is for commands only", Input{Kind: "edit", Contained: true}, Ask, "mode"},
		{"edit in workspace", Input{Kind: "edit", InWorkspace: true}, Allow, "mode"},
		{"edit outside", Input{Kind: "edit"}, Ask, "mode"},
		{"plan edit", Input{Mode: ModePlan, Kind: "edit", InWorkspace: true}, Deny, "mode"},
		{"plan dangerous bash", Input{Mode: ModePlan, Class: "dangerous"}, Deny, "mode"},
		{"plan read-only bash", Input{Mode: ModePlan, Class: "read_only", ReadOnly: true}, Allow, "mode"},
		{"plan allow rule still denied", Input{Mode: ModePlan, Match: userAllow, Class: "dangerous"}, Deny, "mode"},
		{"read", Input{Kind: "read", ReadOnly: true, InWorkspace: true}, Allow, "mode"},
		{"read outside (read-only dir)", Input{Kind: "read", ReadOnly: true}, Allow, "mode"},
		{"unknown kind asks", Input{Kind: "other", InWorkspace: true}, Ask, "mode"},
		{"job control (KillShell)", Input{Kind: "execute", InWorkspace: true}, Allow, "mode"},
		{"job control in plan mode", Input{Mode: ModePlan, Kind: "execute", InWorkspace: true}, Deny, "mode"},
		{"fetch asks", Input{Kind: "fetch", ReadOnly: false}, Ask, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in)
			if got.Action != tt.want || got.By != tt.wantBy {
				t.Fatalf("Decide = %+v, want %s by %s", got, tt.want, tt.wantBy)
			}
			if got.Reason == "" {
				t.Fatal("no reason")
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("yolo"); err == nil {
		t.Error("ParseMode(yolo) succeeded")
	}
}

// fakeFS resolves paths like a workspace with symlinks lib -> src,
// conf -> .agentbox, hooks -> .git/hooks, shh -> secrets and out -> /etc.
func fakeFS(p string) (string, error) {
	links := map[string]string{"/ws/lib": "/ws/src", "/ws/conf": "/ws/.agentbox", "/ws/hooks": "/ws/.git/hooks", "/ws/shh": "/ws/secrets"}
	for from, to := range links {
		if p == from || strings.HasPrefix(p, from+"/") {
			return to + strings.TrimPrefix(p, from), nil
		}
	}
	if p == "/ws/out" || strings.HasPrefix(p, "/ws/out/") {
		return "", errors.New("the symlink /ws/out points to /etc, which leads out of the workspace")
	}
	return p, nil
}

func TestEvaluateResolved(t *testing.T) {
	rctx := ctx
	rctx.Resolve = fakeFS
	tests := []struct {
		name             string
		deny, ask, allow []string
		call             Call
		want             Action
		note             string
	}{
		{name: "edit through symlink denied", deny: []string{"Edit(./src/**)"}, call: file("Edit", "edit", "/ws/lib/a.go"), want: Deny, note: "/ws/lib/a.go resolves to /ws/src/a.go"},
		{name: "write new file through symlink denied", deny: []string{"Edit(./src/**)"}, call: file("Write", "edit", "/ws/lib/new.go"), want: Deny, note: "resolves to /ws/src/new.go"},
		{name: "read through symlink denied", deny: []string{"Read(./secrets/**)"}, call: file("Read", "read", "/ws/shh/key"), want: Deny, note: "resolves"},
		{name: "grep of the symlinked dir denied", deny: []string{"Read(./secrets/**)"}, call: file("Grep", "search", "/ws/shh"), want: Deny, note: "resolves"},
		{name: "policy dir through symlink", deny: []string{"Edit(/.agentbox/**)"}, call: file("Write", "edit", "/ws/conf/config.yaml"), want: Deny, note: "resolves"},
		{name: "git hooks through symlink ask", ask: []string{"Edit(./.git/**)"}, call: file("Write", "edit", "/ws/hooks/pre-commit"), want: Ask, note: "resolves"},
		{name: "as written still denied", deny: []string{"Edit(./lib/**)"}, call: file("Edit", "edit", "/ws/lib/a.go"), want: Deny, note: "-"},
		{name: "ask on resolution beats allow as written", ask: []string{"Edit(./src/**)"}, allow: []string{"Edit(./lib/**)"}, call: file("Edit", "edit", "/ws/lib/a.go"), want: Ask, note: "resolves"},
		{name: "allow must cover the resolution", allow: []string{"Edit(./lib/**)"}, call: file("Edit", "edit", "/ws/lib/a.go"), want: ""},
		{name: "allow covering both", allow: []string{"Edit(./lib/**)", "Edit(./src/**)"}, call: file("Edit", "edit", "/ws/lib/a.go"), want: Allow},
		{name: "no symlink unchanged", deny: []string{"Edit(./src/**)"}, call: file("Edit", "edit", "/ws/docs/a.md"), want: ""},
		{name: "leaving the workspace is refused", call: file("Read", "read", "/ws/out/passwd"), want: Deny, note: "leads out of the workspace"},
		{name: "even when allowed", allow: []string{"Read"}, call: file("Read", "read", "/ws/out/passwd"), want: Deny, note: "leads out"},
		{name: "commands are not resolved", allow: []string{"Bash"}, call: bash([]string{"cat", "/ws/out/passwd"}), want: Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := mustRules(t, tt.deny, tt.ask, tt.allow)
			m := rs.Evaluate(rctx, tt.call)
			if m.Action != tt.want {
				t.Fatalf("Evaluate = %q (rule %v, note %q), want %q", m.Action, m.Rule, m.Note, tt.want)
			}
			if tt.note == "-" && m.Note != "" || tt.note != "-" && !strings.Contains(m.Note, tt.note) {
				t.Fatalf("note %q, want %q", m.Note, tt.note)
			}
			// Without a resolver only the path as written counts.
			if plain := rs.Evaluate(ctx, tt.call); (strings.Contains(tt.note, "resolves") || strings.Contains(tt.note, "leads out")) && plain.Action == tt.want {
				t.Fatalf("the case passes without resolution too (%q): it tests nothing", plain.Action)
			}
		})
	}
}

func TestDecideNamesResolution(t *testing.T) {
	rctx := ctx
	rctx.Resolve = fakeFS
	rs := mustRules(t, []string{"Edit(./src/**)"}, nil, nil)
	out := Decide(Input{Mode: ModeBypass, Match: rs.Evaluate(rctx, file("Edit", "edit", "/ws/lib/a.go")), Kind: "edit", InWorkspace: true})
	if out.Action != Deny || !strings.Contains(out.Reason, "Edit(./src/**)") || !strings.Contains(out.Reason, "/ws/lib/a.go resolves to /ws/src/a.go") {
		t.Fatalf("%+v", out)
	}
	out = Decide(Input{Mode: ModeBypass, Match: Rules{}.Evaluate(rctx, file("Read", "read", "/ws/out/x")), Kind: "read", ReadOnly: true, InWorkspace: true})
	if out.Action != Deny || !strings.Contains(out.Reason, "leads out of the workspace") {
		t.Fatalf("%+v", out)
	}
}

// TestReadRulesCoverShellReads: a Read deny or ask rule applies to a
// shell command that may read a matching path — named literally, through
// a glob that can match it, through a symlink, or through a word known
// only at run time (then it asks, even for a deny rule).
func TestReadRulesCoverShellReads(t *testing.T) {
	secrets, _ := ParseAll([]string{"Read(.env)", "Read(*.pem)"}, SecretSource)
	deny, _ := ParseAll([]string{"Read(./private/**)"}, "user")
	allow, _ := ParseAll([]string{"Bash(cat:*)"}, "user")
	rs := Rules{Deny: deny, Ask: secrets, Allow: allow}
	rctx := ctx
	rctx.Resolve = func(p string) (string, error) {
		if p == "/ws/innocent" {
			return "/ws/.env", nil
		}
		return p, nil
	}
	bash := func(reads ...Read) Call {
		return Call{Tool: "Bash", Kind: "execute", HasCommand: true, Commands: [][]string{{"cat", "x"}},
			Parts: []Part{{Argv: []string{"cat", "x"}, Class: "dangerous", Prefix: []string{"cat"}}}, Reads: reads}
	}
	lit := func(p string) Read { return Read{Pattern: p} }
	tests := []struct {
		call Call
		want Action
		rule string
		list string
	}{
		{bash(lit(".env")), Ask, "Read(.env)", "secrets"},
		{bash(lit(".e*")), Ask, "Read(.env)", "secrets"},
		{bash(lit(".[e]nv")), Ask, "Read(.env)", "secrets"},
		{bash(lit(".en?")), Ask, "Read(.env)", "secrets"},
		{bash(lit("sub/*.pem")), Ask, "Read(*.pem)", "secrets"},
		{bash(lit("/ws/a/../.env")), Ask, "Read(.env)", "secrets"},
		{bash(lit("innocent")), Ask, "Read(.env)", "secrets"},
		{bash(Read{Pattern: "**", RunTime: true}), Ask, "Read(./private/**)", "deny"},
		{bash(lit("private/k")), Deny, "Read(./private/**)", "deny"},
		{bash(lit("p*/k")), Deny, "Read(./private/**)", "deny"},
		{bash(lit("*.go"), lit(".envrc"), lit("README.md")), Allow, "Bash(cat:*)", "allow"},
		{bash(lit("/etc/x/.env")), Allow, "Bash(cat:*)", "allow"}, // outside the workspace
		{Call{Tool: "Read", Kind: "read", Paths: []string{"/ws/sub/.env"}}, Ask, "Read(.env)", "secrets"},
		// A relative word is read where the command starts (the session's
		// working directory after an earlier cd).
		{Call{Tool: "Bash", Kind: "execute", HasCommand: true, Commands: [][]string{{"cat", "k"}}, Reads: []Read{lit("k")}, Dir: "/ws/private"}, Deny, "Read(./private/**)", "deny"},
	}
	for _, tt := range tests {
		m := rs.Evaluate(rctx, tt.call)
		if m.Action != tt.want || m.Rule == nil || m.Rule.Raw != tt.rule || m.List != tt.list {
			t.Errorf("Evaluate(%+v) = %s %v (%s), want %s %s (%s)", tt.call.Reads, m.Action, m.Rule, m.List, tt.want, tt.rule, tt.list)
		}
	}
}

// TestSecretAskWinsOverGrantsAndModes: a secret rule's ask is an explicit
// ask match: a grant, an allow rule or a read-only verdict do not lift it,
// in default, acceptEdits and plan mode; dontAsk refuses.
func TestSecretAskWinsOverGrantsAndModes(t *testing.T) {
	secrets, _ := ParseAll([]string{"Read(.env)"}, SecretSource)
	m := Match{Action: Ask, Rule: &secrets[0], List: "secrets"}
	for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModePlan} {
		out := Decide(Input{Mode: mode, Match: m, Class: "read_only", ReadOnly: true, InWorkspace: true, Granted: true, Kind: "execute"})
		if out.Action != Ask || !strings.Contains(out.Reason, "Read(.env)") {
			t.Errorf("%s: %+v, want ask naming Read(.env)", mode, out)
		}
	}
	if out := Decide(Input{Mode: ModeDontAsk, Match: m, Class: "read_only", ReadOnly: true}); out.Action != Deny {
		t.Errorf("dontAsk: %+v", out)
	}
}

// TestBareGlobReadsTheDirectory: a bare glob (`*`, `dir/*`) is judged by
// the names it really expands to, as bash expands them (no dot files),
// symlinks resolved; a directory that cannot be listed asks.
func TestBareGlobReadsTheDirectory(t *testing.T) {
	secrets, _ := ParseAll([]string{"Read(.env)", "Read(*.pem)"}, SecretSource)
	allow, _ := ParseAll([]string{"Bash(cat:*)"}, "user")
	rs := Rules{Ask: secrets, Allow: allow}
	dirs := map[string][]string{
		"/ws":       {".env", "a.go", "notes.txt"},
		"/ws/certs": {"server.pem", "README"},
		"/ws/links": {"innocent"},
	}
	rctx := ctx
	rctx.ReadDir = func(dir string) ([]string, error) {
		names, ok := dirs[dir]
		if !ok {
			return nil, errors.New("cannot list")
		}
		return names, nil
	}
	rctx.Resolve = func(p string) (string, error) {
		if p == "/ws/links/innocent" {
			return "/ws/.env", nil
		}
		return p, nil
	}
	for word, want := range map[string]Action{
		"*":           Allow, // .env is a dot file: * never names it
		"certs/*":     Ask,
		"certs/R*":    Ask, // not bare: R*.pem can match it by pattern
		"certs/[!s]*": Allow,
		"certs/[s]*":  Ask,
		"links/*":     Ask, // a symlink to .env
		"gone/*":      Ask, // cannot be listed
		"/etc/*":      Allow,
	} {
		c := Call{Tool: "Bash", Kind: "execute", HasCommand: true, Commands: [][]string{{"cat", word}}, Reads: []Read{{Pattern: word}},
			Parts: []Part{{Argv: []string{"cat", word}, Class: "dangerous", Prefix: []string{"cat"}}}}
		if m := rs.Evaluate(rctx, c); m.Action != want {
			t.Errorf("cat %s: %s %v, want %s", word, m.Action, m.Rule, want)
		}
	}
}
