package permission

import (
	"path/filepath"
	"slices"
)

// Coverage is how far allow rules and grants cover a call.
type Coverage struct {
	// Rule is the first allow rule used (nil when none was).
	Rule *Rule
	// Granted: a grant covers at least one part the rules did not.
	Granted bool
	// Uncovered lists the parts of a command that nothing covers, in
	// order: the parts an "always allow" would have to add. All of a
	// command's parts when it could not be resolved (Call.Parts empty).
	Uncovered []Part
	// Resolved: the call is a command resolved into parts, or a call
	// without a command.
	Resolved bool
}

// Covered reports whether every part is covered and at least one by an
// allow rule or a grant (a call that is read-only throughout is the
// mode's to decide, not the rules').
func (cv Coverage) Covered() bool {
	return cv.Resolved && len(cv.Uncovered) == 0 && (cv.Rule != nil || cv.Granted)
}

// Cover reports how the allow rules and grants cover c. A command is
// covered part by part: each simple command must be read-only (a cd only
// into the workspace), or start with a grant's prefix, or match an allow
// rule. A forbidden part is never covered by a grant, and by a rule only
// when the rule names it (a specifier) and does not come from the project.
// An allow rule without a specifier covers every call of its tool. A
// command that could not be resolved into parts is covered only by such a
// rule. Deny and ask rules are not looked at: Evaluate applies them first.
func (rs Rules) Cover(ctx Context, c Call, grants []Grant) Coverage {
	for i := range rs.Allow {
		if r := &rs.Allow[i]; r.AppliesTo(c) && r.Spec == "" {
			return Coverage{Rule: r, Resolved: true}
		}
	}
	if !c.HasCommand {
		// Path rules are the Evaluate's; a grant without a prefix covers
		// every call of a tool without a command.
		for _, g := range grants {
			if g.Tool == c.Tool && len(g.Prefix) == 0 {
				return Coverage{Granted: true, Resolved: true}
			}
		}
		return Coverage{Resolved: true}
	}
	if len(c.Parts) == 0 {
		return Coverage{Uncovered: unresolved(c)}
	}
	cv := Coverage{Resolved: true}
	for _, p := range c.Parts {
		if p.Class == "read_only" && (!changesDir(p.Argv) || cdWithin(ctx, p.Argv)) {
			continue
		}
		if r := rs.allowRuleFor(c, p); r != nil {
			if cv.Rule == nil {
				cv.Rule = r
			}
			continue
		}
		if p.Class != "forbidden" && slices.ContainsFunc(grants, func(g Grant) bool { return g.coversArgv(c.Tool, p.Argv) }) {
			cv.Granted = true
			continue
		}
		cv.Uncovered = append(cv.Uncovered, p)
	}
	return cv
}

// unresolved is a command that is not resolved into parts, as the one
// part nothing covers.
func unresolved(c Call) []Part {
	out := make([]Part, 0, len(c.Commands))
	for _, argv := range c.Commands {
		out = append(out, Part{Argv: argv, Class: "dangerous"})
	}
	return out
}

// allowRuleFor is the first allow rule with a command specifier that
// matches part p, or nil.
func (rs Rules) allowRuleFor(c Call, p Part) *Rule {
	for i := range rs.Allow {
		r := &rs.Allow[i]
		if !r.AppliesTo(c) || !isCommandTool(r.Tool) || r.Spec == "" || !r.MatchCommand(p.Argv) {
			continue
		}
		if p.Class == "forbidden" && r.Source == "project" {
			continue
		}
		return r
	}
	return nil
}

// coversArgv reports whether the grant covers one simple command of tool.
func (g Grant) coversArgv(tool string, argv []string) bool {
	return g.Tool == tool && len(g.Prefix) > 0 && len(argv) >= len(g.Prefix) && slices.Equal(argv[:len(g.Prefix)], g.Prefix)
}

// changesDir reports whether argv changes the shell's directory.
func changesDir(argv []string) bool {
	return len(argv) > 0 && (argv[0] == "cd" || argv[0] == "pushd" || argv[0] == "popd")
}

// cdWithin reports whether argv is a cd into the workspace: one operand
// after the options cd knows, either an absolute path inside the
// workspace or a relative path that does not climb out (the command
// starts in the session's directory, which is inside the workspace). A cd
// with no operand (home), `cd -` or pushd and popd do not count.
func cdWithin(ctx Context, argv []string) bool {
	if len(argv) == 0 || argv[0] != "cd" {
		return false
	}
	ops := argv[1:]
	for len(ops) > 0 && (ops[0] == "-L" || ops[0] == "-P" || ops[0] == "-e" || ops[0] == "-@" || ops[0] == "--") {
		ops = ops[1:]
	}
	if len(ops) != 1 || ops[0] == "" || ops[0] == "-" {
		return false
	}
	dir := ops[0]
	if !filepath.IsAbs(dir) {
		return filepath.IsLocal(dir)
	}
	if ctx.Workspace == "" {
		return false
	}
	rel, err := filepath.Rel(ctx.Workspace, filepath.Clean(dir))
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
