package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbox/agentbox/tools/permission"
)

// okSandbox is a Sandbox whose availability a test sets; the test tools
// never run anything in it.
type okSandbox struct{ err error }

func (s okSandbox) Exec(context.Context, ExecRequest) (ExecResult, error) {
	return ExecResult{}, errors.New("not used")
}
func (s okSandbox) WriteFile(context.Context, WriteRequest) error { return errors.New("not used") }
func (s okSandbox) Available(context.Context) error               { return s.err }

// contained sets what makes a call contained: a sandbox, the snapshot
// store (the harness's) and auto_allow_sandboxed.
func contained(o *Options) {
	o.Sandbox = okSandbox{}
	o.AutoAllowSandboxed = true
}

func counting(n *atomic.Int32, allow bool) Approver {
	return ApproverFunc(func(ctx context.Context, r ApprovalRequest) (Approval, error) {
		n.Add(1)
		return Approval{Allow: allow, By: "test"}, nil
	})
}

func TestAutoAllowSandboxed(t *testing.T) {
	askRule := func(o *Options) { o.Rules.Ask = []permission.Rule{{Raw: "Bash(npm:*)", Tool: "Bash", Spec: "npm:*"}} }
	denyRule := func(o *Options) { o.Rules.Deny = []permission.Rule{{Raw: "Bash(npm:*)", Tool: "Bash", Spec: "npm:*"}} }
	mode := func(m permission.Mode) func(*Options) { return func(o *Options) { o.Mode = m } }
	tests := []struct {
		name    string
		opts    []func(*Options)
		command string
		asked   bool      // the approver was asked (it refuses)
		errKind ErrorKind // "" = ran
		by      string    // Decision.By in the audit record
		whyNot  string    // in the reason of a call that asked
	}{
		{name: "contained dangerous runs", opts: []func(*Options){contained}, command: "npm test", by: permission.ByContained},
		{name: "compound runs", opts: []func(*Options){contained}, command: "npm test && rm x", by: permission.ByContained},
		{name: "unresolved runs", opts: []func(*Options){contained}, command: "npm test $(curl x)", by: permission.ByContained},
		{name: "acceptEdits runs", opts: []func(*Options){contained, mode(permission.ModeAcceptEdits)}, command: "npm test", by: permission.ByContained},
		{name: "off asks", opts: []func(*Options){contained, func(o *Options) { o.AutoAllowSandboxed = false }}, command: "npm test", asked: true, errKind: ErrPermissionDenied, by: "test"},
		{name: "sandbox unavailable asks", opts: []func(*Options){contained, func(o *Options) { o.Sandbox = okSandbox{err: errors.New("no engine")} }}, command: "npm test", asked: true, errKind: ErrPermissionDenied, by: "test", whyNot: "the sandbox is unavailable"},
		{name: "no sandbox asks", opts: []func(*Options){contained, func(o *Options) { o.Sandbox = nil }}, command: "npm test", asked: true, errKind: ErrPermissionDenied, by: "test", whyNot: "would not run in the sandbox"},
		{name: "not journaled asks", opts: []func(*Options){contained, func(o *Options) { o.Snapshots = nil }}, command: "npm test", asked: true, errKind: ErrPermissionDenied, by: "test", whyNot: "would not be journaled"},
		{name: "an ask rule still asks", opts: []func(*Options){contained, askRule}, command: "npm test", asked: true, errKind: ErrPermissionDenied, by: "test"},
		{name: "an ask rule on one part asks", opts: []func(*Options){contained, askRule}, command: "ls && npm test", asked: true, errKind: ErrPermissionDenied, by: "test"},
		{name: "a deny rule denies", opts: []func(*Options){contained, denyRule}, command: "npm test", errKind: ErrPermissionDenied, by: "rule"},
		{name: "forbidden never runs", opts: []func(*Options){contained}, command: "mkfs /dev/sda", errKind: ErrForbidden, by: "classifier"},
		{name: "forbidden part never runs", opts: []func(*Options){contained}, command: "npm test && mkfs /dev/sda", errKind: ErrForbidden, by: "classifier"},
		{name: "dontAsk still denies", opts: []func(*Options){contained, mode(permission.ModeDontAsk)}, command: "npm test", errKind: ErrPermissionDenied, by: "classifier"},
		{name: "plan still denies", opts: []func(*Options){contained, mode(permission.ModePlan)}, command: "npm test", errKind: ErrPermissionDenied, by: "mode"},
		{name: "read-only is the mode's", opts: []func(*Options){contained}, command: "ls", by: "mode"},
		{name: "reading a secret asks", opts: []func(*Options){contained, func(o *Options) {
			o.Classify = func(ctx context.Context, cmd string) Verdict {
				v := fakeClassify(ctx, cmd)
				v.Reasons = append(v.Reasons, Reason{Rule: "read.credential", Text: ".env", Message: "reads a credential or secret file"})
				return v
			}
		}}, command: "npm test .env", asked: true, errKind: ErrPermissionDenied, by: "test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int32
			h := newHarness(t, func(o *Options) {
				o.Approver = counting(&asked, false)
				for _, f := range tt.opts {
					f(o)
				}
			})
			r := h.run("Bash", fmt.Sprintf(`{"command":%q}`, tt.command))
			if got := asked.Load() > 0; got != tt.asked {
				t.Fatalf("asked = %v, want %v (%+v)", got, tt.asked, r)
			}
			if tt.errKind == "" && r.Err != nil || tt.errKind != "" && (r.Err == nil || r.Err.Kind != tt.errKind) {
				t.Fatalf("result %+v, want error kind %q", r.Result, tt.errKind)
			}
			rec := h.audit.recs[len(h.audit.recs)-1]
			if rec.DecidedBy != tt.by {
				t.Fatalf("audit decided by %q (%s), want %q", rec.DecidedBy, rec.Reason, tt.by)
			}
			if tt.whyNot != "" && (!strings.Contains(rec.Reason, tt.whyNot) || !strings.Contains(r.Content, tt.whyNot)) {
				t.Fatalf("the refusal does not say why it did not run unasked (%q): %s / %s", tt.whyNot, rec.Reason, r.Content)
			}
			if tt.by != permission.ByContained {
				if strings.Contains(r.Content, "without asking") {
					t.Fatalf("result claims it ran without asking: %q", r.Content)
				}
				return
			}
			// The model and the operator learn why it ran and how to undo it.
			id := "j-" + r.CallID
			if r.Meta["auto_allowed"] != "contained" || !strings.Contains(r.Content, "ran this without asking") ||
				!strings.Contains(r.Content, "agentbox undo "+id) || strings.Contains(r.Content, "Undo tool") {
				t.Fatalf("result does not say it was auto-allowed and how to undo it: %q %v", r.Content, r.Meta)
			}
			if !strings.Contains(rec.Reason, "contained") || !strings.Contains(rec.Reason, "agentbox undo "+id) || rec.JournalID != id {
				t.Fatalf("audit record: %+v", rec)
			}
		})
	}
}

// TestAutoAllowNamesUndoTool: when the model has an Undo tool, the note
// names it.
func TestAutoAllowNamesUndoTool(t *testing.T) {
	h := newHarness(t, contained)
	undo := New("Undo", func(ctx context.Context, env *Env, p *echoParams) (Result, error) { return Result{}, nil }, ReadOnly())
	if err := h.p.Registry().Register(SourceBuiltin, undo); err != nil {
		t.Fatal(err)
	}
	r := h.run("Bash", `{"command":"npm test"}`)
	if r.Err != nil || !strings.Contains(r.Content, `the Undo tool, call_id "j-`+r.CallID+`"`) {
		t.Fatalf("%+v", r.Result)
	}
}

// A command tool whose call runs as a background job.
func TestAutoAllowBackgroundNeedsJobJournal(t *testing.T) {
	bg := New("Bg", func(ctx context.Context, env *Env, p *bashParams) (Result, error) {
		return Result{Content: "started"}, nil
	}, WithKind(KindExecute), WithScope(func(*bashParams) Scope { return Scope{Kind: ScopeWorkspace, Detached: true} }))
	var asked atomic.Int32
	h := newHarness(t, func(o *Options) { contained(o); o.Approver = counting(&asked, false) })
	if err := h.p.Registry().Register(SourceBuiltin, bg); err != nil {
		t.Fatal(err)
	}
	// fakeSnap is no DetachedSnapshotter: the job's changes after the call
	// returns would not be journaled, so it is not contained.
	if r := h.run("Bg", `{"command":"npm start"}`); asked.Load() != 1 || r.Err == nil {
		t.Fatalf("a background job without a job journal ran unasked: %+v", r)
	}
}

func TestCompoundGrants(t *testing.T) {
	grants := &memGrants{}
	var reqs []ApprovalRequest
	answer := Approval{Allow: true, Remember: GrantSession, By: "test"}
	h := newHarness(t, func(o *Options) {
		o.Grants = grants
		o.Approver = ApproverFunc(func(ctx context.Context, r ApprovalRequest) (Approval, error) {
			reqs = append(reqs, r)
			return answer, nil
		})
	})
	grants.Add(Grant{Tool: "Bash", Prefix: []string{"npm"}, Scope: GrantProject})
	grants.Add(Grant{Tool: "Bash", Prefix: []string{"mkfs"}, Scope: GrantProject})
	steps := []struct {
		command string
		asked   bool
		offered string // the prefixes offered, "a b|c"
		errKind ErrorKind
	}{
		{command: "npm test", asked: false},
		{command: "npm test && ls", asked: false},
		{command: "cd sub && npm test | cat", asked: false},
		{command: "npm test && rm x", asked: true, offered: "rm"},
		{command: "npm test $(curl x)", asked: true, offered: ""},
		{command: "mkfs /dev/sda", asked: false, errKind: ErrForbidden}, // a grant never lifts forbidden
		{command: "npm test && mkfs /dev/sda", asked: false, errKind: ErrForbidden},
		// "always allow" of the make part only: one grant for that part.
		{command: "make && go test && npm test", asked: true, offered: "make|go"},
		{command: "make", asked: false},
		{command: "go test", asked: true, offered: "go"},
	}
	for i, st := range steps {
		before := len(reqs)
		if st.command == "make && go test && npm test" {
			answer.Prefixes = [][]string{{"make"}}
		} else {
			answer.Prefixes = [][]string{{"nothing", "offered"}} // ignored: not offered
		}
		r := h.run("Bash", fmt.Sprintf(`{"command":%q}`, st.command))
		if asked := len(reqs) > before; asked != st.asked {
			t.Fatalf("step %d %q: asked = %v, want %v (%+v)", i, st.command, asked, st.asked, r.Result)
		}
		if st.errKind == "" && r.Err != nil || st.errKind != "" && (r.Err == nil || r.Err.Kind != st.errKind) {
			t.Fatalf("step %d %q: %+v, want error kind %q", i, st.command, r.Result, st.errKind)
		}
		if st.asked {
			var got []string
			for _, p := range reqs[len(reqs)-1].Prefixes {
				got = append(got, strings.Join(p, " "))
			}
			if strings.Join(got, "|") != st.offered {
				t.Fatalf("step %d %q: offered %q, want %q", i, st.command, got, st.offered)
			}
		}
	}
	// An ask rule beats grants: no "always allow" is offered for it.
	h2 := newHarness(t, func(o *Options) {
		o.Rules.Ask = []permission.Rule{{Raw: "Bash(git push:*)", Tool: "Bash", Spec: "git push:*"}}
		o.Approver = ApproverFunc(func(ctx context.Context, r ApprovalRequest) (Approval, error) {
			reqs = append(reqs, r)
			return Approval{Allow: true, Remember: GrantSession, By: "test"}, nil
		})
	})
	if r := h2.run("Bash", `{"command":"git push"}`); r.Err != nil || reqs[len(reqs)-1].OffersGrant() || len(h2.sess.Grants()) != 0 {
		t.Fatalf("an ask rule's question offered always allow: %+v, %+v", reqs[len(reqs)-1], h2.sess.Grants())
	}
	if gs := h.sess.Grants(); len(gs) != 1 || strings.Join(gs[0].Prefix, " ") != "make" {
		t.Fatalf("session grants %+v, want only make", gs)
	}
}
