// Package pathspec owns the path patterns of agentbox's path rules: the
// gitignore-style specifiers of permission rules and of the secret-file
// rules (`Read(./src/**)`, `Read(~/.ssh/**)`, `Read(//etc/**)`, `.env`),
// compiled to absolute doublestar patterns, and the question whether two
// patterns can match a common path (Overlap), which is how a shell word
// (`.e*`, `.[e]nv`, `$(cmd)`) is judged against a rule.
//
// It promises: Compile never widens or narrows a specifier beyond what
// its documentation says; Overlap never answers false when some path
// matches both patterns (it may answer true for patterns that share no
// path when they are too large or odd to decide: that errs towards the
// rule). Everything here is pure and safe for concurrent use. It imports
// only doublestar, so both the classifier and the permission rules can
// use it.
package pathspec

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ErrBadSpec is wrapped by Compile's errors.
var ErrBadSpec = errors.New("bad path specifier")

// Compile turns a gitignore-style specifier into an absolute doublestar
// pattern:
//   - `//abs/**` is the absolute path /abs/**
//   - `~/x` is below home
//   - `/x` and `./x` and `x/y` are anchored at workspace
//   - a specifier without a slash (`*.env`, `secrets`) matches at any
//     depth below workspace, like in .gitignore
//   - a trailing `/` is dropped (a rule covers everything below what it
//     matches; see Covers)
//
// An empty workspace means "not known": the pattern is then anchored at
// the root `/` of a virtual tree, which is how shell words relative to an
// unknown directory are anchored too (see Join). An empty home means "not
// known": it is the virtual directory `/~`, for rules and words alike.
func Compile(spec, workspace, home string) (string, error) {
	s := spec
	var base, rest string
	switch {
	case strings.HasPrefix(s, "//"):
		base, rest = "/", strings.TrimPrefix(s, "//")
	case s == "~" || strings.HasPrefix(s, "~/"):
		base, rest = orVirtualHome(home), strings.TrimPrefix(strings.TrimPrefix(s, "~"), "/")
	case strings.HasPrefix(s, "/"):
		base, rest = workspace, strings.TrimPrefix(s, "/")
	case strings.HasPrefix(s, "./"):
		base, rest = workspace, strings.TrimPrefix(s, "./")
	default:
		base, rest = workspace, s
		if !strings.Contains(strings.TrimSuffix(s, "/"), "/") {
			rest = "**/" + s
		}
	}
	if base == "" {
		base = "/"
	}
	for strings.Contains(rest, "//") {
		rest = strings.ReplaceAll(rest, "//", "/")
	}
	rest = strings.Trim(rest, "/")
	pat := EscapeMeta(path.Clean(base))
	if rest != "" {
		if pat != "/" {
			pat += "/"
		}
		pat += rest
	}
	if !doublestar.ValidatePattern(pat) {
		return "", fmt.Errorf("%w: %q: invalid glob pattern", ErrBadSpec, spec)
	}
	return pat, nil
}

// BareGlob reports whether a word pattern is a glob whose last name is
// only wildcards (`*`, `dir/*`, `?`, `[a-z]*`) below a literal directory:
// it names whatever the directory holds, like a directory handed to a
// recursive reader, rather than anything in particular. dir is the
// directory part. Such a word is judged by what the directory holds when
// that can be looked at (permission rules), not by pattern overlap, which
// would make every `grep x *` match `*.pem`.
func BareGlob(word string) (dir, name string, ok bool) {
	i := strings.LastIndexByte(word, '/')
	dir, name = "", word
	if i >= 0 {
		dir, name = word[:i], word[i+1:]
	}
	if name == "" || hasMeta(dir) || strings.ContainsAny(name, `\{`) {
		return "", "", false
	}
	// Only wildcards: strip *, ? and bracket classes; nothing may remain.
	rest := name
	for rest != "" {
		switch rest[0] {
		case '*', '?':
			rest = rest[1:]
		case '[':
			j := strings.IndexByte(rest[1:], ']')
			if j < 0 {
				return "", "", false
			}
			rest = rest[j+2:]
		default:
			return "", "", false
		}
	}
	return dir, name, true
}

// virtualHome stands for a home directory that is not known.
const virtualHome = "/~"

func orVirtualHome(home string) string {
	if home == "" {
		return virtualHome
	}
	return home
}

// EscapeMeta escapes the glob metacharacters of a literal path.
func EscapeMeta(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Match reports whether the compiled pattern matches the absolute path p
// or one of its parent directories (a rule on a directory covers what is
// below it).
func Match(pattern, p string) bool {
	p = path.Clean(p)
	for {
		if ok, _ := doublestar.Match(pattern, p); ok {
			return true
		}
		parent := path.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}

// Join anchors a shell word's pattern (see Overlap for its syntax): a
// pattern that begins with a run-time part (`**`) may be absolute and is
// anchored anywhere; `~` and `~/x` are below home (the virtual `/~` when
// home is ""); a relative pattern is below cwd ("" for the virtual root `/`). `.`
// and `..` segments are resolved; a `..` after a wildcard segment makes
// everything before it unknown (`/**`).
func Join(cwd, home, word string) string {
	var p string
	switch {
	case strings.HasPrefix(word, "**"):
		p = "/" + word
	case word == "~" || strings.HasPrefix(word, "~/"):
		p = EscapeMeta(orVirtualHome(home)) + "/" + strings.TrimPrefix(strings.TrimPrefix(word, "~"), "/")
	case strings.HasPrefix(word, "/"):
		p = word
	default:
		if cwd == "" {
			cwd = "/"
		}
		p = EscapeMeta(cwd) + "/" + word
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 && !hasMeta(segs[len(segs)-1]) {
				segs = segs[:len(segs)-1]
			} else if len(segs) > 0 {
				segs = []string{"**"}
			}
		default:
			segs = append(segs, s)
		}
	}
	return "/" + strings.Join(segs, "/")
}

func hasMeta(seg string) bool { return strings.ContainsAny(seg, `*?[{\`) }

// A Rule is a rule's compiled pattern, for many [Rule.Covers] questions. Safe
// for concurrent use.
type Rule struct {
	self, below *Glob
	// last is the pattern's last name when it has no brace or `**`: a
	// literal word can only match if its last name (or, below, one of
	// its names) matches it, which is checked first, cheaply; lastGlob is
	// it compiled, the same check for a glob word.
	last     string
	lastGlob *Glob
	// pre and suf are last's literal start and end (before its first and
	// after its last wildcard): a name must have them to match, checked
	// before path.Match.
	pre, suf string
}

// NewRule compiles a rule's pattern (from Compile).
func NewRule(pattern string) Rule {
	r := Rule{self: Compiled(pattern, false), below: Compiled(strings.TrimSuffix(pattern, "/")+"/**", false)}
	if strings.ContainsAny(pattern, "{}[]") {
		return r // an alternative or a class may hold a slash: names are unclear
	}
	if last := pattern[strings.LastIndexByte(pattern, '/')+1:]; !strings.ContainsAny(last, "{[") && !strings.Contains(last, "**") {
		if _, err := path.Match(last, "x"); err == nil {
			r.last = last
			if !strings.Contains(last, `\`) {
				if i := strings.IndexAny(last, "*?"); i >= 0 {
					r.pre, r.suf = last[:i], last[strings.LastIndexAny(last, "*?")+1:]
				} else {
					r.pre = last
				}
			}
		}
	}
	if last := pattern[strings.LastIndexByte(pattern, '/')+1:]; last != "" && !strings.Contains(last, "**") && !strings.ContainsAny(last, "{}") {
		r.lastGlob = Compiled(last, false)
	}
	return r
}

// Matches reports whether the rule can match a path word can name (not
// counting the paths below them).
func (r Rule) Matches(word *Glob) bool {
	if word.isLit && r.last != "" && len(word.litNames()) > 0 && !r.nameMatches(path.Base(word.lit)) {
		return false
	}
	if names := word.nameGlobs(); r.lastGlob != nil && len(names) > 0 && !r.lastGlob.Overlaps(names[len(names)-1]) {
		return false
	}
	return r.self.Overlaps(word)
}

// Covers reports whether the rule can match a path word can name, or a
// parent directory of one.
func (r Rule) Covers(word *Glob) bool {
	if word.isLit && r.last != "" && len(word.litNames()) > 0 && !slices.ContainsFunc(word.litNames(), r.nameMatches) {
		return false
	}
	if names := word.nameGlobs(); r.lastGlob != nil && len(names) > 0 {
		// Some name of the word must be the rule's last name.
		found := false
		for _, n := range names {
			if r.lastGlob.Overlaps(n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return r.self.Overlaps(word) || r.below.Overlaps(word)
}

// nameMatches reports whether one name matches the rule's last name.
func (r Rule) nameMatches(n string) bool {
	if len(n) < len(r.pre)+len(r.suf) || !strings.HasPrefix(n, r.pre) || !strings.HasSuffix(n, r.suf) {
		return false
	}
	ok, _ := path.Match(r.last, n)
	return ok
}
