// Package permission owns agentbox's permission rules and modes: parsing
// rules in Claude Code's syntax (`Bash`, `Bash(npm run test:*)`,
// `Edit(./src/**)`, `Read(~/.ssh/**)`, `Read(//etc/**)`), matching them
// against a call's normalized argv or absolute paths, and turning rules,
// the classifier's class, grants and the mode into allow, ask or deny.
//
// It promises: deny beats ask beats allow; Bash rules only ever see the
// classifier's normalized argv, never the raw command string; a deny or
// ask rule that matches any simple command of a command applies to all of
// it; allow rules and "always allow" grants cover a compound command only
// part by part (Rules.Cover), and never one the classifier could not
// resolve into simple commands; a forbidden command is never allowed by a
// project rule, a grant or any mode; a dangerous command runs unasked
// only when the caller says it is contained (Input.Contained) and no rule
// asks; anything unknown asks. Everything here is pure and safe for
// concurrent use.
package permission

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ErrBadRule is wrapped by rule parse errors.
var ErrBadRule = errors.New("bad permission rule")

// Rule is one parsed rule.
type Rule struct {
	// Raw is the rule as written.
	Raw string `json:"rule"`
	// Tool is the tool name the rule is about.
	Tool string `json:"tool"`
	// Spec is the text between the parentheses ("" when none).
	Spec string `json:"spec,omitempty"`
	// Source says where the rule came from ("default", "user", "project",
	// "env", "flag", ...); project rules can never allow forbidden calls.
	Source string `json:"source,omitempty"`
}

// Parse parses `Tool` or `Tool(specifier)`.
func Parse(s string) (Rule, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Rule{}, fmt.Errorf("%w: empty rule", ErrBadRule)
	}
	name, spec, hasSpec := strings.Cut(s, "(")
	name = strings.TrimSpace(name)
	if hasSpec {
		if !strings.HasSuffix(spec, ")") {
			return Rule{}, fmt.Errorf("%w: %q: missing closing parenthesis", ErrBadRule, raw)
		}
		spec = strings.TrimSpace(strings.TrimSuffix(spec, ")"))
		if spec == "" {
			return Rule{}, fmt.Errorf("%w: %q: empty specifier (write %s alone to match every call)", ErrBadRule, raw, name)
		}
		if spec == "*" {
			spec = ""
		}
	}
	if name == "" {
		return Rule{}, fmt.Errorf("%w: %q: no tool name", ErrBadRule, raw)
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return Rule{}, fmt.Errorf("%w: %q: bad character %q in tool name", ErrBadRule, raw, c)
		}
	}
	r := Rule{Raw: strings.TrimSpace(raw), Tool: name, Spec: spec}
	if spec != "" && !isCommandTool(name) {
		if _, err := r.pathPattern(Context{Workspace: "/w", Home: "/h"}); err != nil {
			return Rule{}, err
		}
	}
	return r, nil
}

// ParseAll parses rules, tagging each with source.
func ParseAll(rules []string, source string) ([]Rule, error) {
	out := make([]Rule, 0, len(rules))
	for _, s := range rules {
		r, err := Parse(s)
		if err != nil {
			return nil, err
		}
		r.Source = source
		out = append(out, r)
	}
	return out, nil
}

func (r Rule) String() string { return r.Raw }

// Call is what rules are matched against.
type Call struct {
	// Tool is the canonical name; Aliases its other names.
	Tool    string
	Aliases []string
	// Kind is the tool's kind (read, edit, search, ...).
	Kind string
	// HasCommand is true for tools whose input is a shell command; then
	// Commands holds the classifier's normalized argv of every simple
	// command, nested ones included (nil when the command could not be
	// parsed). Deny and ask rules match any of them.
	HasCommand bool
	Commands   [][]string
	// Parts are the simple commands of a command the classifier resolved
	// wholly into simple commands (a list, pipeline, &&/||/; chain,
	// subshell or block of commands whose every word is known before it
	// runs), each with its own class. Empty when it could not (a
	// substitution, an expansion, eval, a function, a loop, ...): then no
	// rule with a specifier and no grant covers the command.
	Parts []Part
	// Paths are the absolute, clean paths the call touches.
	Paths []string
}

// Part is one simple command of a resolved command (Call.Parts).
type Part struct {
	// Argv is the normalized argv (assignments before the command left
	// out; the classifier judged them).
	Argv []string
	// Class is the classifier's class of this command alone, its
	// redirections and assignments included: read_only, dangerous or
	// forbidden.
	Class string
	// Prefix is the argv prefix an "always allow" of this part would be
	// keyed by (nil: none can be offered). Only carried through: Cover
	// does not look at it.
	Prefix []string
}

// Context resolves relative rule paths, and the paths of a call.
type Context struct {
	Workspace string // `./x`, `x` and `/x` are relative to it
	Home      string // `~/x`
	// Resolve, when set, returns where a call's path really leads: its
	// symlinks resolved, component by component, without leaving the
	// workspace (the caller owns the file system access; see
	// tools.ResolveBeneath). Path rules then match both the path as
	// written and its resolution, and the stricter outcome wins. An error
	// (a symlink leading out of the workspace, a loop) refuses the call.
	Resolve func(path string) (string, error)
}

// pathsOf returns c's paths as written followed by the resolutions that
// differ from them, and note, which says (for a refusal) how a path
// resolved when a resolution was added. err is the first resolution
// that failed.
func (ctx Context) pathsOf(c Call) (paths []string, notes map[string]string, err error) {
	if ctx.Resolve == nil || c.HasCommand || len(c.Paths) == 0 {
		return c.Paths, nil, nil
	}
	paths = append(paths, c.Paths...)
	for _, p := range c.Paths {
		real, err := ctx.Resolve(p)
		if err != nil {
			return nil, nil, err
		}
		if real != p && !slices.Contains(paths, real) {
			paths = append(paths, real)
			if notes == nil {
				notes = map[string]string{}
			}
			notes[real] = fmt.Sprintf("%s resolves to %s", p, real)
		}
	}
	return paths, notes, nil
}

// isCommandTool reports whether rules for this tool name carry command
// specifiers rather than path specifiers.
func isCommandTool(name string) bool { return name == "Bash" }

// group is the set of kinds a canonical rule name covers, as in Claude
// Code: Edit rules apply to every tool that changes files, Read rules to
// every tool that reads them.
func group(name string) []string {
	switch name {
	case "Edit":
		return []string{"edit", "delete", "move"}
	case "Read":
		return []string{"read", "search"}
	}
	return nil
}

// AppliesTo reports whether the rule's tool part names c's tool (by name,
// alias, or kind group).
func (r Rule) AppliesTo(c Call) bool {
	if r.Tool == c.Tool {
		return true
	}
	for _, a := range c.Aliases {
		if r.Tool == a {
			return true
		}
	}
	for _, k := range group(r.Tool) {
		if k == c.Kind {
			return true
		}
	}
	return false
}

// MatchCommand reports whether the rule's command specifier matches one
// argv. `npm run test:*` (or a last word `*`) matches argv starting with
// npm run test; otherwise argv must equal the specifier's words, where a
// word `*` matches any single word.
func (r Rule) MatchCommand(argv []string) bool {
	if r.Spec == "" {
		return true
	}
	words, prefix := commandPattern(r.Spec)
	if len(words) == 0 {
		return false
	}
	if prefix {
		if len(argv) < len(words) {
			return false
		}
	} else if len(argv) != len(words) {
		return false
	}
	for i, w := range words {
		if w != "*" && w != argv[i] {
			return false
		}
	}
	return true
}

func commandPattern(spec string) ([]string, bool) {
	prefix := false
	if strings.HasSuffix(spec, ":*") {
		prefix = true
		spec = strings.TrimSuffix(spec, ":*")
	}
	words := splitWords(spec)
	if !prefix && len(words) > 1 && words[len(words)-1] == "*" {
		prefix = true
		words = words[:len(words)-1]
	}
	return words, prefix
}

// splitWords splits like a shell without expansions: quotes group,
// backslash escapes.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	var quote rune
	esc := false
	for _, c := range s {
		switch {
		case esc:
			cur.WriteRune(c)
			esc = false
			in = true
		case c == '\\' && quote != '\'':
			esc = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote = c
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// pathPattern turns a gitignore-style specifier into an absolute
// doublestar pattern:
//   - `//abs/**` is the absolute path /abs/**
//   - `~/x` is below the home directory
//   - `/x` and `./x` and `x/y` are anchored at the workspace
//   - a pattern without a slash (`*.env`, `secrets`) matches at any depth
//     below the workspace, like in .gitignore
//   - a trailing `/` or a match of any parent directory covers everything
//     below it
func (r Rule) pathPattern(ctx Context) (string, error) {
	s := r.Spec
	var base, rest string
	switch {
	case strings.HasPrefix(s, "//"):
		base, rest = "/", strings.TrimPrefix(s, "//")
	case s == "~" || strings.HasPrefix(s, "~/"):
		if ctx.Home == "" {
			return "", fmt.Errorf("%w: %q: no home directory to resolve ~", ErrBadRule, r.Raw)
		}
		base, rest = ctx.Home, strings.TrimPrefix(strings.TrimPrefix(s, "~"), "/")
	case strings.HasPrefix(s, "/"):
		base, rest = ctx.Workspace, strings.TrimPrefix(s, "/")
	case strings.HasPrefix(s, "./"):
		base, rest = ctx.Workspace, strings.TrimPrefix(s, "./")
	default:
		base, rest = ctx.Workspace, s
		if !strings.Contains(strings.TrimSuffix(s, "/"), "/") {
			rest = "**/" + s
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	pat := escapeMeta(filepath.ToSlash(filepath.Clean(base)))
	if rest != "" {
		if pat != "/" {
			pat += "/"
		}
		pat += rest
	}
	if !doublestar.ValidatePattern(pat) {
		return "", fmt.Errorf("%w: %q: invalid glob pattern", ErrBadRule, r.Raw)
	}
	return pat, nil
}

func escapeMeta(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// MatchPath reports whether the rule's path specifier matches the
// absolute path p or one of its parent directories.
func (r Rule) MatchPath(ctx Context, p string) bool {
	if r.Spec == "" {
		return true
	}
	pat, err := r.pathPattern(ctx)
	if err != nil {
		return false
	}
	p = filepath.ToSlash(filepath.Clean(p))
	for {
		if ok, _ := doublestar.Match(pat, p); ok {
			return true
		}
		parent := filepath.ToSlash(filepath.Dir(p))
		if parent == p {
			return false
		}
		p = parent
	}
}

// matchesAny: does the rule match the call at least in part (any command,
// any path)? Used for deny and ask.
func (r Rule) matchesAny(ctx Context, c Call) bool {
	if !r.AppliesTo(c) {
		return false
	}
	if r.Spec == "" {
		return true
	}
	if c.HasCommand {
		if !isCommandTool(r.Tool) {
			return false
		}
		for _, argv := range c.Commands {
			if r.MatchCommand(argv) {
				return true
			}
		}
		return false
	}
	if isCommandTool(r.Tool) {
		return false
	}
	for _, p := range c.Paths {
		if r.MatchPath(ctx, p) {
			return true
		}
	}
	return false
}

// CommandPrefix returns the words of a command rule in prefix form
// (`Bash(npm run test:*)` → npm, run, test), as a grant keys them. ok is
// false for other rules, for a rule without a specifier and for a
// specifier with a `*` word (a grant matches words exactly).
func (r Rule) CommandPrefix() (words []string, ok bool) {
	if !isCommandTool(r.Tool) || r.Spec == "" || !strings.HasSuffix(r.Spec, ":*") {
		return nil, false
	}
	words, _ = commandPattern(r.Spec)
	if len(words) == 0 || slices.Contains(words, "*") {
		return nil, false
	}
	return words, true
}
