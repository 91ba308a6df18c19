package permission

import (
	"fmt"
	"strings"
)

// Mode is a permission mode.
type Mode string

const (
	ModeDefault     Mode = "default"           // read-only runs, workspace edits run (snapshotted), dangerous runs when contained, else asks
	ModeAcceptEdits Mode = "acceptEdits"       // as default; edits never ask
	ModePlan        Mode = "plan"              // read-only calls only
	ModeDontAsk     Mode = "dontAsk"           // whatever would ask is denied
	ModeBypass      Mode = "bypassPermissions" // everything but forbidden and deny rules
)

// Modes lists the modes, loosest last.
var Modes = []Mode{ModePlan, ModeDontAsk, ModeDefault, ModeAcceptEdits, ModeBypass}

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown permission mode %q (want one of plan, dontAsk, default, acceptEdits, bypassPermissions)", s)
}

// Action is what happens to a call.
type Action string

const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Rules are the deny, ask and allow lists.
type Rules struct {
	Deny, Ask, Allow []Rule
}

// Match is the rule outcome for a call.
type Match struct {
	Action Action // "" when no rule matched
	Rule   *Rule
	// Note says how the rule came to match when it matched a path's
	// resolution rather than the path as written ("lib/x resolves to
	// src/x"); or, for a deny without a rule, why the call is refused.
	Note string
	// List names the configuration list the rule is in: "deny", "ask",
	// "allow", or "secrets" (tools.secrets). A deny rule that asks
	// (a shell word known only at run time) has List "deny".
	List string
}

// Evaluate applies deny, then ask, then allow. A deny or ask rule matches
// when it matches any part of the call (any command, any path); allow
// needs every command (every path) to be covered by some allow rule.
// With ctx.Resolve, a path counts twice, as written and as resolved: a
// deny or ask of either applies, and an allow must cover both. A path
// that cannot be resolved (a symlink out of the workspace) is denied.
func (rs Rules) Evaluate(ctx Context, c Call) Match {
	paths, notes, err := ctx.pathsOf(c)
	if err != nil {
		return Match{Action: Deny, Note: err.Error()}
	}
	c.Paths = paths
	c.readWords(ctx)
	note := func(r *Rule) string {
		for _, p := range c.Paths {
			if n, ok := notes[p]; ok && r.Spec != "" && r.MatchPath(ctx, p) {
				return n
			}
		}
		return ""
	}
	if c.HasCommand {
		// A deny rule matches a shell command's reads only when a word
		// names (or globs) a denied path; a word known only at run time
		// may be one, which asks.
		for i := range rs.Deny {
			if rs.Deny[i].matchesCommand(ctx, c, false) {
				return Match{Action: Deny, Rule: &rs.Deny[i], List: "deny"}
			}
		}
		for i := range rs.Deny {
			if rs.Deny[i].matchReads(ctx, c, true) {
				return Match{Action: Ask, Rule: &rs.Deny[i], List: "deny", Note: "a path the command reads is only known at run time and may be one this rule denies"}
			}
		}
	}
	for i := range rs.Deny {
		if !c.HasCommand && rs.Deny[i].matchesAny(ctx, c) {
			return Match{Action: Deny, Rule: &rs.Deny[i], List: "deny", Note: note(&rs.Deny[i])}
		}
	}
	for i := range rs.Ask {
		if rs.Ask[i].matchesAny(ctx, c) {
			list := "ask"
			if rs.Ask[i].Source == SecretSource {
				list = "secrets"
			}
			return Match{Action: Ask, Rule: &rs.Ask[i], List: list, Note: note(&rs.Ask[i])}
		}
	}
	if r := rs.allowAll(ctx, c); r != nil {
		return Match{Action: Allow, Rule: r, List: "allow"}
	}
	return Match{}
}

func (rs Rules) allowAll(ctx Context, c Call) *Rule {
	if c.HasCommand {
		if cv := rs.Cover(ctx, c, nil); cv.Covered() {
			return cv.Rule
		}
		return nil
	}
	var first *Rule
	covered := func(test func(*Rule) bool) bool {
		for i := range rs.Allow {
			r := &rs.Allow[i]
			if r.AppliesTo(c) && test(r) {
				if first == nil {
					first = r
				}
				return true
			}
		}
		return false
	}
	// A whole-tool rule covers everything.
	if covered(func(r *Rule) bool { return r.Spec == "" }) {
		return first
	}
	if len(c.Paths) == 0 {
		return nil
	}
	for _, p := range c.Paths {
		if !covered(func(r *Rule) bool { return !isCommandTool(r.Tool) && r.MatchPath(ctx, p) }) {
			return nil
		}
	}
	return first
}

// Grant is an "always allow" a person gave: the simple commands of Tool
// that start with Prefix (any call of Tool when Prefix is empty and the
// tool has no command). Rules.Cover applies grants part by part.
type Grant struct {
	Tool   string
	Prefix []string
}

// Input is everything Decide looks at.
type Input struct {
	Mode  Mode
	Match Match
	// Class is the classifier's class ("" for tools without a command).
	Class string
	// ReadOnly: the tool says this call only reads (for Bash: Class is
	// read_only).
	ReadOnly bool
	// Kind of the tool.
	Kind string
	// InWorkspace: every path of the call is inside the workspace.
	InWorkspace bool
	// Granted: "always allow" grants (with allow rules) cover the call.
	Granted bool
	// Contained: tools.auto_allow_sandboxed is on and the call is a
	// command that runs in the sandbox with its changes journaled, so it
	// can be undone, and protected paths reverted unless approved.
	Contained bool
}

// ByContained is Outcome.By for a dangerous command allowed without
// asking because it is contained (Input.Contained).
const ByContained = "auto_allow_sandboxed"

// Outcome is the decision and why.
type Outcome struct {
	Action Action
	// Forbidden marks a deny because the classifier said forbidden.
	Forbidden bool
	// By names what decided: "rule", "classifier", "mode", "grant",
	// ByContained.
	By string
	// Reason is a sentence for the model and the audit log.
	Reason string
}

// Decide turns rules, class, grants and mode into an outcome.
func Decide(in Input) Outcome {
	mode := in.Mode
	if mode == "" {
		mode = ModeDefault
	}
	if in.Class == "forbidden" {
		// Only an explicit allow rule from outside the project can lift a
		// forbidden verdict, never a mode or a grant.
		m := in.Match
		if !(m.Action == Allow && m.Rule != nil && m.Rule.Source != "project" && m.Rule.Spec != "") {
			return Outcome{Action: Deny, Forbidden: true, By: "classifier", Reason: "the classifier judged this command forbidden"}
		}
	}
	if in.Match.Action == Deny {
		if in.Match.Rule == nil && in.Match.Note != "" {
			return Outcome{Action: Deny, By: "rule", Reason: in.Match.Note}
		}
		return Outcome{Action: Deny, By: "rule", Reason: fmt.Sprintf("denied by the permission rule %s%s", ruleName(in.Match.Rule), noteOf(in.Match))}
	}
	if mode == ModePlan && !in.ReadOnly {
		return Outcome{Action: Deny, By: "mode", Reason: "plan mode allows read-only calls only"}
	}
	ask := func(o Outcome) Outcome {
		if mode == ModeDontAsk {
			o.Action = Deny
			o.Reason += " (dontAsk mode turns every question into a refusal)"
		}
		return o
	}
	if in.Match.Action == Ask {
		if mode == ModeBypass {
			return Outcome{Action: Allow, By: "mode", Reason: "bypassPermissions mode"}
		}
		return ask(Outcome{Action: Ask, By: "rule", Reason: fmt.Sprintf("the permission rule %s asks for approval%s", ruleName(in.Match.Rule), noteOf(in.Match))})
	}
	if in.Match.Action == Allow {
		return Outcome{Action: Allow, By: "rule", Reason: fmt.Sprintf("allowed by the permission rule %s", ruleName(in.Match.Rule))}
	}
	if in.Granted {
		return Outcome{Action: Allow, By: "grant", Reason: "an earlier \"always allow\" covers it"}
	}
	if mode == ModeBypass {
		return Outcome{Action: Allow, By: "mode", Reason: "bypassPermissions mode"}
	}
	if in.ReadOnly && (in.InWorkspace || in.Class != "") {
		return Outcome{Action: Allow, By: "mode", Reason: "read-only"}
	}
	if in.Class == "dangerous" && in.Contained && (mode == ModeDefault || mode == ModeAcceptEdits) {
		return Outcome{Action: Allow, By: ByContained, Reason: "not read-only, but contained: it runs in the sandbox without network and its changes are journaled, so they can be undone"}
	}
	if in.Class != "" {
		return ask(Outcome{Action: Ask, By: "classifier", Reason: "the classifier could not prove this command read-only"})
	}
	switch in.Kind {
	case "edit", "delete", "move":
		if in.InWorkspace {
			return Outcome{Action: Allow, By: "mode", Reason: "a workspace edit (snapshotted, can be undone)"}
		}
	case "execute":
		// An execute tool without a command (KillShell) only controls a
		// command that already went through the pipeline; it starts
		// nothing new. Tools that run programs must have a command field.
		return Outcome{Action: Allow, By: "mode", Reason: "controls a command that was already allowed"}
	case "read", "search":
		if in.ReadOnly {
			// Reads outside the workspace reach here only for configured
			// read-only directories (backfill refuses others).
			return Outcome{Action: Allow, By: "mode", Reason: "read-only"}
		}
	}
	return ask(Outcome{Action: Ask, By: "mode", Reason: "this kind of call needs approval"})
}

// noteOf is the match's note as a parenthesis, or "".
func noteOf(m Match) string {
	if m.Note == "" {
		return ""
	}
	return " (" + m.Note + ")"
}

func ruleName(r *Rule) string {
	if r == nil {
		return "(unknown)"
	}
	s := r.Raw
	if r.Source != "" {
		s += " (from " + r.Source + ")"
	}
	return strings.TrimSpace(s)
}

// DeniesWholly reports whether a deny rule without a specifier covers
// every call of the tool (so front ends can leave it out of the list).
func (rs Rules) DeniesWholly(tool string, aliases []string, kind string) bool {
	c := Call{Tool: tool, Aliases: aliases, Kind: kind}
	for _, r := range rs.Deny {
		if r.Spec == "" && r.AppliesTo(c) {
			return true
		}
	}
	return false
}
