package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/tools/permission"
)

// answer is an approver that always gives ap.
func answer(ap Approval) func(*Options) {
	return func(o *Options) {
		o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (Approval, error) { return ap, nil })
	}
}

func TestRefusalNamesTheFix(t *testing.T) {
	askRule := func(o *Options) { o.Rules.Ask, _ = permission.ParseAll([]string{"Bash(git push:*)"}, "user") }
	tests := []struct {
		name    string
		opts    []func(*Options)
		input   string
		kind    ErrorKind
		want    []string // substrings, "{ws}" is the workspace
		notWant []string
	}{
		{
			name: "non-interactive names grant command, rule and mode", input: `{"command":"npm test --x"}`, kind: ErrNeedsApproval,
			want:    []string{"nobody could be asked", "`agentbox --workspace {ws} grants add 'Bash(npm:*)'`", "allow rule Bash(npm:*) to tools.allow", "--mode bypassPermissions"},
			notWant: []string{"wrote", "said", "a person refused"},
		},
		{
			name: "every part not allowed yet in one grant command", input: `{"command":"make -j2 && ls && npm test"}`, kind: ErrNeedsApproval,
			want:    []string{"`agentbox --workspace {ws} grants add 'Bash(make:*)' 'Bash(npm:*)'`", "allow rules Bash(make:*), Bash(npm:*) to tools.allow"},
			notWant: []string{"Bash(ls:*)"},
		},
		{
			name: "approver message is kept, typed-looking feedback from no human is not", input: `{"command":"npm test"}`, kind: ErrNeedsApproval,
			opts:    []func(*Options){answer(Approval{By: "non-interactive", Message: "The MCP client cannot ask its user.", Feedback: "injected"})},
			want:    []string{"The MCP client cannot ask its user.", "grants add"},
			notWant: []string{"injected", "wrote"},
		},
		{
			name: "a person's typed reason goes to the model", input: `{"command":"npm test"}`, kind: ErrPermissionDenied,
			opts:    []func(*Options){answer(Approval{By: "tty", Feedback: "use make test instead"})},
			want:    []string{"a person refused this Bash call", `The person who refused it wrote: "use make test instead"`},
			notWant: []string{"grants add", "bypassPermissions"},
		},
		{
			name: "a refusal without a reason says nothing was written", input: `{"command":"npm test"}`, kind: ErrPermissionDenied,
			opts:    []func(*Options){answer(Approval{By: "mcp-elicitation", Message: "The user denied this call."})},
			want:    []string{"a person refused", "The user denied this call."},
			notWant: []string{"wrote", "said"},
		},
		{
			name: "no answer in time is not a person's refusal", input: `{"command":"npm test"}`, kind: ErrNeedsApproval,
			opts:    []func(*Options){answer(Approval{By: "mcp-elicitation", Unanswered: true, Feedback: "x"})},
			want:    []string{"nobody answered in time", "grants add"},
			notWant: []string{"a person refused", "wrote"},
		},
		{
			name: "an ask rule is named, not a grant", input: `{"command":"git push origin"}`, kind: ErrNeedsApproval,
			opts:    []func(*Options){askRule},
			want:    []string{"remove the ask rule Bash(git push:*) from tools.ask", "bypassPermissions"},
			notWant: []string{"grants add"},
		},
		{
			name: "no prefix offered: nothing can cover it", input: `{"command":"eval x"}`, kind: ErrNeedsApproval,
			opts: []func(*Options){func(o *Options) {
				o.Classify = func(ctx context.Context, cmd string) Verdict {
					v := fakeClassify(ctx, cmd)
					v.Prefix, v.Parts = nil, nil // not resolved into simple commands
					return v
				}
			}},
			want:    []string{"no rule or grant can cover this command"},
			notWant: []string{"grants add"},
		},
		{
			name: "approver error still names the fix", input: `{"command":"npm test"}`, kind: ErrNeedsApproval,
			opts: []func(*Options){func(o *Options) {
				o.Approver = ApproverFunc(func(context.Context, ApprovalRequest) (Approval, error) { return Approval{}, errBoom })
			}},
			want: []string{"none could be asked", "grants add 'Bash(npm:*)'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) {
				for _, f := range tt.opts {
					f(o)
				}
			})
			r := h.run("Bash", tt.input)
			if r.Err == nil || r.Err.Kind != tt.kind {
				t.Fatalf("err = %v, want %s (%q)", r.Err, tt.kind, r.Content)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "{ws}", shellQuote(h.ws))
				if !strings.Contains(r.Content, w) {
					t.Errorf("refusal lacks %q:\n%s", w, r.Content)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.Content, w) {
					t.Errorf("refusal has %q:\n%s", w, r.Content)
				}
			}
		})
	}
}

var errBoom = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestGrantRuleRoundTrip(t *testing.T) {
	tests := [][]string{
		{"npm", "test"},
		{"go", "test", "./..."},
		{"echo", "a b"},
		{"printf", "it's"},
		{"git", "log", "--format=%H:%s"},
		{"x", `back\slash`, `"q"`},
		{"ls", "*.go"},
	}
	for _, prefix := range tests {
		rule := GrantRule(Grant{Tool: "Bash", Prefix: prefix})
		r, err := permission.Parse(rule)
		if err != nil {
			t.Fatalf("%q: %v", rule, err)
		}
		words, ok := r.CommandPrefix()
		if !ok || strings.Join(words, "\x00") != strings.Join(prefix, "\x00") {
			t.Errorf("%q parses back to %q (%v), want %q", rule, words, ok, prefix)
		}
		if !r.MatchCommand(append(append([]string(nil), prefix...), "more")) {
			t.Errorf("%q does not match its own prefix", rule)
		}
	}
	if got := GrantRule(Grant{Tool: "Write"}); got != "Write" {
		t.Errorf("tool grant rule %q", got)
	}
}

func TestGrantID(t *testing.T) {
	a := Grant{Tool: "Bash", Prefix: []string{"npm", "test"}, Scope: GrantProject}
	b := Grant{Tool: "Bash", Prefix: []string{"npm test"}, Scope: GrantProject}
	if GrantID(a, "") != GrantID(a, "other") {
		t.Error("a project grant's id depends on the session")
	}
	if GrantID(a, "") == GrantID(b, "") {
		t.Error("prefix words are not kept apart")
	}
	s := a
	s.Scope = GrantSession
	if GrantID(s, "s1") == GrantID(s, "s2") || GrantID(s, "s1") == GrantID(a, "s1") {
		t.Error("session grants of different sessions or scopes share an id")
	}
	if id := GrantID(a, ""); len(id) != 13 || id[0] != 'g' {
		t.Errorf("id %q", id)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"/w/x": "/w/x", "/w/a b": "'/w/a b'", "it's": `'it'"'"'s'`, "": "''", "Bash(npm:*)": "'Bash(npm:*)'"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
