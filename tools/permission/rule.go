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
// asks; anything unknown asks. Path rules are one mechanism for every
// tool: a `Read(...)` rule also applies to a shell command that may read a
// matching path (the classifier's Verdict.Reads, passed as Call.Reads) —
// named literally or through a symlink, or through a glob that can match
// it (glob-vs-glob overlap, config/pathspec) — and a word known only at
// run time makes even a deny rule ask. The secret files (tools.secrets)
// are ask rules of Source SecretSource; an ask match is decided before
// grants, read-only verdicts, containment and mode defaults, so nothing
// but bypassPermissions lets such a call run unasked. Everything here is
// pure and safe for concurrent use.
package permission

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/config/pathspec"
)

// SecretSource is the Source of the ask rules that guard secret files
// (tools.secrets): `Read(.env)`, `Read(*.pem)`, ... They are ordinary ask
// rules, so they ask for every tool, a shell command that may read a
// matching path included, and beat allow rules, grants and any mode's
// default but bypassPermissions.
const SecretSource = "secrets"

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
	// Reads are the words of a shell command that may name files it reads
	// (the classifier's Verdict.Reads): Read rules apply to them.
	Reads []Read
	// Dir is the absolute directory a shell command starts in (the
	// session's working directory); "" is the workspace. Relative reads
	// are anchored there.
	Dir string

	words *[]readWord // Reads anchored and compiled, once per Evaluate
}

// readWord is a Read anchored at the call's directory and compiled.
type readWord struct {
	word    string
	glob    *pathspec.Glob
	runTime bool
}

// maxJudgedReads bounds the reads judged one by one; a command with more
// may read anything, which every Read rule asks about.
const maxJudgedReads = 1024

// readWords anchors and compiles c's reads (once; Evaluate prepares them).
func (c *Call) readWords(ctx Context) []readWord {
	if c.words != nil {
		return *c.words
	}
	dir := c.Dir
	if dir == "" {
		dir = ctx.Workspace
	}
	reads := c.Reads
	var out []readWord
	if len(reads) > maxJudgedReads {
		reads = reads[:maxJudgedReads]
		out = append(out, readWord{word: "/**", glob: pathspec.Compiled("/**", true), runTime: true})
	}
	for _, rd := range reads {
		w := pathspec.Join(filepath.ToSlash(dir), filepath.ToSlash(ctx.Home), rd.Pattern)
		out = append(out, readWord{word: w, glob: pathspec.Compiled(w, true), runTime: rd.RunTime})
	}
	c.words = &out
	return out
}

// Read is one word of a shell command that may name a file it reads.
type Read struct {
	// Pattern is the word as a pathspec pattern (literal text escaped,
	// glob characters kept, run-time parts `**`), relative to the
	// workspace unless absolute or `~/`.
	Pattern string `json:"pattern"`
	// RunTime: the word has a part only known at run time.
	RunTime bool `json:"run_time,omitempty"`
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
	// ReadDir, when set, lists the names in a directory beneath the
	// workspace (the caller owns the file system access). A shell word
	// that is a bare glob (`*`, `dir/*`, see pathspec.BareGlob) is then
	// judged by the names it really expands to: a Read rule matches when
	// one of them matches it. Without ReadDir such a word matches by
	// pattern overlap like any glob.
	ReadDir func(dir string) ([]string, error)
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
// doublestar pattern (pathspec.Compile):
//   - `//abs/**` is the absolute path /abs/**
//   - `~/x` is below the home directory
//   - `/x` and `./x` and `x/y` are anchored at the workspace
//   - a pattern without a slash (`*.env`, `secrets`) matches at any depth
//     below the workspace, like in .gitignore
//   - a trailing `/` or a match of any parent directory covers everything
//     below it
func (r Rule) pathPattern(ctx Context) (string, error) {
	if strings.HasPrefix(r.Spec, "~") && ctx.Home == "" {
		return "", fmt.Errorf("%w: %q: no home directory to resolve ~", ErrBadRule, r.Raw)
	}
	pat, err := pathspec.Compile(r.Spec, filepath.ToSlash(ctx.Workspace), filepath.ToSlash(ctx.Home))
	if err != nil {
		return "", fmt.Errorf("%w: %q: invalid glob pattern", ErrBadRule, r.Raw)
	}
	return pat, nil
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
	return pathspec.Match(pat, filepath.ToSlash(p))
}

// matchesAny: does the rule match the call at least in part (any command,
// any path)? Used for deny and ask.
func (r Rule) matchesAny(ctx Context, c Call) bool {
	if c.HasCommand {
		return r.matchesCommand(ctx, c, true)
	}
	if !r.AppliesTo(c) {
		return false
	}
	if r.Spec == "" {
		return true
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

// matchesCommand: does the rule match a shell command at least in part —
// a Bash rule any of its argv, a Read rule any file it may read (words
// known only at run time count when runTime is true)?
func (r Rule) matchesCommand(ctx Context, c Call, runTime bool) bool {
	if r.readRule() {
		return r.matchReads(ctx, c, runTime)
	}
	if !r.AppliesTo(c) {
		return false
	}
	if r.Spec == "" {
		return true
	}
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

// readRule reports whether r is a path rule that applies to what a shell
// command reads: Read(spec) (Read covers every tool that reads files).
func (r Rule) readRule() bool { return r.Tool == "Read" && r.Spec != "" }

// matchReads reports whether a Read rule can match a file the command
// may read: a word that names a matching path (also through a symlink,
// resolved beneath the workspace), a glob that can match one, or — when
// runTime is true — a word with a part only known at run time.
func (r Rule) matchReads(ctx Context, c Call, runTime bool) bool {
	if !r.readRule() || len(c.Reads) == 0 {
		return false
	}
	pat, err := r.pathPattern(ctx)
	if err != nil {
		return false
	}
	rule := pathspec.NewRule(pat)
	for _, rd := range c.readWords(ctx) {
		if rd.runTime && !runTime {
			continue
		}
		word := rd.word
		if d, name, bare := pathspec.BareGlob(word); bare && !rd.runTime && ctx.ReadDir != nil {
			if ctx.globMatches(pat, d, name) {
				return true
			}
			continue
		}
		if rule.Covers(rd.glob) {
			return true
		}
		if real, ok := ctx.resolveRead(word); ok && pathspec.Match(pat, real) {
			return true
		}
	}
	return false
}

// globMatches reports whether a bare glob `dir/name` expands, as bash
// would (no dot files), to a path the compiled rule pattern matches, also
// through a symlink. A directory that cannot be listed matches (fail
// closed) when it is inside the workspace; outside it the sandbox has
// nothing to read.
func (ctx Context) globMatches(pat, dir, name string) bool {
	dir = pathspec.UnescapeWord(dir)
	if dir == "" {
		dir = "/"
	}
	if !withinSlash(dir, filepath.ToSlash(ctx.Workspace)) {
		return false
	}
	names, err := ctx.ReadDir(filepath.FromSlash(dir))
	if err != nil {
		return true
	}
	name = strings.Replace(name, "[!", "[^", -1) // bash's negation is path.Match's ^
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		if ok, _ := path.Match(name, n); !ok {
			continue
		}
		p := path.Join(dir, n)
		if pathspec.Match(pat, p) {
			return true
		}
		if real, ok := ctx.resolveRead(pathspec.EscapeMeta(p)); ok && pathspec.Match(pat, real) {
			return true
		}
	}
	return false
}

func withinSlash(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// resolveRead resolves a literal word's path beneath the workspace (a
// symlink made by an earlier call leads to the file a command reads).
func (ctx Context) resolveRead(word string) (string, bool) {
	if ctx.Resolve == nil || strings.ContainsAny(word, `*?[{`) {
		return "", false
	}
	word = pathspec.UnescapeWord(word)
	real, err := ctx.Resolve(filepath.FromSlash(word))
	if err != nil || real == word {
		return "", false
	}
	return filepath.ToSlash(real), true
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
