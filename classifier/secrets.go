package classifier

import (
	"strings"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/config/pathspec"
)

// Secret files. The classifier gets the secret path rules as data (the
// specifiers of config.Tools.Secrets, default config.DefaultSecretPaths;
// WithSecrets) and judges every word that may name a file a command reads
// against them with pathspec.Overlap: a literal path, a glob that can
// match a secret (`.e*`, `.[e]nv`, `*.pem`), or a word with a part only
// known at run time (`$(ls | grep env)`) makes the command dangerous with
// rule read.secret, naming the path rule. It does not know the workspace
// or the home directory: a relative word is anchored at a virtual root,
// and rules that name a place (`/x`, `~/x`) are matched loosely (see
// pathspec.Compile with empty workspace and home). The permission rules
// match the same words (Verdict.Reads) against Read rules with the real
// workspace.

// secretRule is one compiled secret path rule.
type secretRule struct {
	spec string        // as configured: .env, *.pem, ~/.ssh
	pat  pathspec.Rule // compiled with an unknown workspace and home
}

func compileSecrets(specs []string) []secretRule {
	out := make([]secretRule, 0, len(specs))
	for _, s := range specs {
		p, err := pathspec.Compile(s, "", "")
		if err != nil {
			p = "/**" // fail closed: an unreadable rule guards everything
		}
		out = append(out, secretRule{spec: s, pat: pathspec.NewRule(p)})
	}
	return out
}

var defaultSecrets = compileSecrets(config.DefaultSecretPaths)

// WithSecrets replaces the secret path rules (gitignore-style specifiers,
// as in tools.secrets; default config.DefaultSecretPaths). A specifier
// that does not compile guards every path.
func WithSecrets(specs ...string) Option {
	rules := compileSecrets(specs)
	return func(o *options) { o.secrets = rules }
}

// Read is a word that may name a file a command reads: an argument of a
// simple command (and the value of --opt=value, the file of @file) or the
// target of an input redirection.
type Read struct {
	// Pattern is the word as a pathspec pattern: literal text escaped,
	// glob characters kept, run-time parts `**`. A relative pattern is
	// relative to the directory the command starts in; after a cd in the
	// same command it begins with `**/` (anywhere). `~/` is the home
	// directory. Anchor it with pathspec.Join.
	Pattern string
	// RunTime is set when the word holds a part only known at run time.
	RunTime bool
	// Text and Offset locate the word in the command.
	Text   string
	Offset int
}

// noReads are programs that never open their arguments as files: their
// words are not reads (echo .env prints a name).
var noReads = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, ":": true, "sleep": true, "seq": true,
	"expr": true, "yes": true, "basename": true, "dirname": true, "cd": true, "pushd": true, "popd": true,
	"exit": true, "return": true, "kill": true, "wait": true, "shift": true, "test": true, "[": true,
	"type": true, "which": true, "mkdir": true, "rmdir": true, "rm": true, "touch": true, "unlink": true,
	// They show names and metadata, never content.
	"ls": true, "dir": true, "vdir": true, "stat": true, "du": true, "realpath": true, "readlink": true,
	"find": true, "tree": true, "fd": true, "fdfind": true,
}

// listFileOptions are the options by which a program of noReads does read
// a file: the names (or patterns) listed in it, which it prints back in
// its errors (du --files0-from=.env: "cannot access 'TOKEN=…'"). Long
// names match by GNU's unique prefixes; a short one anywhere in a cluster.
var listFileOptions = map[string]struct{ long, short []string }{
	"du":     {long: []string{"files0-from", "exclude-from"}, short: []string{"X"}},
	"find":   {long: []string{"files0-from"}},
	"tree":   {long: []string{"fromfile"}},
	"fd":     {long: []string{"ignore-file"}},
	"fdfind": {long: []string{"ignore-file"}},
}

// readsListFile reports whether c, a program of noReads, reads a file
// through one of its listFileOptions (or an argument only known at run
// time could be one).
func readsListFile(c *call, name string) bool {
	opts, ok := listFileOptions[name]
	if !ok {
		return false
	}
	for _, f := range c.args[1:] {
		if f.unknown() && f.mayBeOption() {
			return true
		}
		v := f.val
		if v == "--" {
			return false
		}
		n, _, _ := strings.Cut(strings.TrimLeft(v, "-"), "=")
		switch {
		case strings.HasPrefix(v, "--") || (name == "find" && strings.HasPrefix(v, "-")):
			for _, o := range opts.long {
				if len(n) >= 2 && strings.HasPrefix(o, n) {
					return true
				}
			}
		case strings.HasPrefix(v, "-"):
			for _, o := range opts.short {
				if strings.Contains(v[1:], o) {
					return true
				}
			}
		}
	}
	return false
}

// codeReaders are programs besides the interpreters whose arguments hold
// code or a command line that names files to read: sed scripts (r, R),
// awk programs (getline, ARGV), env -S strings. The names they mention
// are judged like those of inline interpreter code.
var codeReaders = map[string]bool{
	"sed": true, "gsed": true, "awk": true, "gawk": true, "mawk": true, "nawk": true, "env": true,
}

// readPatterns are the patterns a word may name a file by: itself, the
// value of an --option=value or name=value, the file of @file (curl -d @f,
// curl -F name=@f), the path of rev:path or host:path (git show HEAD:.env),
// and a path through /proc/self/cwd (the working directory).
func readPatterns(f field) []string {
	out := []string{f.pat}
	for _, sep := range []string{"=", ":"} {
		if _, v, ok := strings.Cut(f.pat, sep); ok && v != "" {
			out = append(out, v)
		}
	}
	for _, p := range out {
		if rest, ok := strings.CutPrefix(p, "@"); ok {
			out = append(out, rest)
		}
		if rest, ok := cutProcCwd(p); ok {
			out = append(out, rest)
		}
	}
	return out
}

// cutProcCwd turns /proc/self/cwd/x (or /proc/N/cwd/x, thread-self) into x.
func cutProcCwd(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	who, rest, ok := strings.Cut(rest, "/")
	if !ok || !(who == "self" || who == "thread-self" || isDigits(who) || who == "**") {
		return "", false
	}
	rest, ok = strings.CutPrefix(rest, "cwd/")
	return rest, ok && rest != ""
}

// codeWords are the names a word of inline code (python -c, node -e,
// perl -e) mentions as possible paths: the runs of characters paths are
// made of. open(".env") mentions .env.
func codeWords(v string) []string {
	// A backslash escape ends a name: env -S reads \_ as a space
	// (cat\_.env is cat .env), \t and \n as white space.
	if strings.Contains(v, "\\") {
		b := []byte(v)
		for i := 0; i < len(b); i++ {
			if b[i] == '\\' {
				b[i] = ' '
				if i+1 < len(b) {
					b[i+1] = ' '
				}
				i++
			}
		}
		v = string(b)
	}
	return strings.FieldsFunc(v, func(r rune) bool {
		return !(r == '.' || r == '/' || r == '_' || r == '-' || r == '~' || r == '*' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r >= 0x80)
	})
}

// readCode judges the paths inline code mentions (an interpreter's
// arguments: -c/-e code, or a script's arguments) as literal reads.
func (a *analyzer) readCode(c *call) {
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if f.unknown() {
			continue
		}
		for _, w := range codeWords(f.val) {
			if w == f.val {
				continue // the word itself was judged as a path
			}
			a.readWord(field{val: w, pat: pathspec.EscapeMeta(w), raw: f.raw, off: f.off})
		}
	}
}

// reads records the words of c that may name files it reads and judges
// them against the secret rules.
func (a *analyzer) reads(c *call, name string) {
	if noReads[name] && !readsListFile(c, name) {
		return
	}
	for i := 1; i < len(c.args); i++ {
		if c.args[i].procSub {
			continue // a pipe (/dev/fd/N); what runs in it is judged itself
		}
		a.readWord(c.args[i])
	}
	if s, ok := lookup(name); ok && s.kind == kCustom && isInterpreterSpec(s) || codeReaders[name] {
		a.readCode(c)
	}
	if name == "xargs" {
		// Literal stdin (xargs cat <<< .env, a here-document) holds the
		// names xargs appends to its command.
		if text, off, ok := a.stdinScript(c); ok {
			for _, w := range codeWords(text) {
				a.readWord(field{val: w, pat: pathspec.EscapeMeta(w), raw: w, off: off})
			}
		}
	}
}

// readWord records one word that may name a file read and makes the
// command dangerous when a secret rule can match it; a match without a
// run-time part marks the pipeline stage as reading a credential.
func (a *analyzer) readWord(f field) {
	for _, p := range readPatterns(f) {
		if !a.recordRead(Read{Pattern: p, RunTime: f.dynamic, Text: f.raw, Offset: f.off}) {
			continue
		}
		r, ok := a.secretRule(p, f.dynamic)
		if !ok {
			continue
		}
		if f.dynamic {
			a.add(Dangerous, "read.secret", f.raw, f.off, "a path only known at run time may name a secret file (the path rule Read("+r.spec+") asks before any tool reads one)")
			continue
		}
		a.add(Dangerous, "read.secret", f.raw, f.off, "may read a secret file: the path rule Read("+r.spec+") asks before any tool reads one")
		if a.cur != nil {
			a.cur.credential = true
		}
	}
	if !f.unknown() && blockDevice(f.val) {
		a.add(Dangerous, "read.raw_disk", f.raw, f.off, "reads a raw disk, which holds every file's data")
		if a.cur != nil {
			a.cur.credential = true
		}
	}
}

// maxReads bounds the words recorded as reads. Past it the command is
// dangerous and its reads end with one that may be anything (so every
// path rule asks): caps never lower strictness.
const maxReads = 4096

type readKey struct {
	pattern string
	offset  int
	cdGen   int // a word after a cd is judged again, in its new places
}

// recordRead adds r to the verdict's reads unless it is there; it reports
// whether it was new (and is to be judged).
func (a *analyzer) recordRead(r Read) bool {
	if a.readIndex == nil {
		a.readIndex = map[readKey]bool{}
	}
	k := readKey{r.Pattern, r.Offset, a.cdGen}
	if a.readIndex[k] {
		return false
	}
	if len(a.readsSeen) >= maxReads {
		if len(a.readsSeen) == maxReads {
			a.readsSeen = append(a.readsSeen, Read{Pattern: "**", RunTime: true, Text: r.Text, Offset: r.Offset})
			a.add(Dangerous, "cap.reads", r.Text, r.Offset, "more words that may name files than the classifier judges; the rest may name anything")
		}
		return false
	}
	a.readIndex[k] = true
	a.readsSeen = append(a.readsSeen, r)
	return true
}

// secretRule finds a secret rule that can match the word pattern p. A
// relative p is anchored at the virtual root, or anywhere after a cd.
func (a *analyzer) secretRule(p string, runTime bool) (secretRule, bool) {
	key := secretKey{p, runTime, a.cdGen}
	if r, ok := a.secretSeen[key]; ok {
		return r, r.spec != ""
	}
	r, ok := a.findSecretRule(p, runTime)
	if a.secretSeen == nil {
		a.secretSeen = map[secretKey]secretRule{}
	}
	a.secretSeen[key] = r
	return r, ok
}

type secretKey struct {
	pattern string
	runTime bool
	cdGen   int
}

func (a *analyzer) findSecretRule(p string, runTime bool) (secretRule, bool) {
	if _, _, bare := pathspec.BareGlob(p); bare && !runTime {
		// `*`, `dir/*`: whatever a directory holds, like grep -r; the
		// permission rules look at what it holds (see pathspec.BareGlob).
		return secretRule{}, false
	}
	var words []*pathspec.Glob
	for _, v := range a.cdVariants(p) {
		words = append(words, pathspec.Compiled(pathspec.Join("", "", v), true))
	}
	// Name a rule that matches the word itself before one that matches a
	// directory above it.
	for _, r := range a.opts.secrets {
		for _, w := range words {
			if r.pat.Matches(w) {
				return r, true
			}
		}
	}
	for _, r := range a.opts.secrets {
		for _, w := range words {
			if r.pat.Covers(w) {
				return r, true
			}
		}
	}
	return secretRule{}, false
}

// secretLiteral reports whether a literal path names a secret file or a
// raw disk.
func (a *analyzer) secretLiteral(s string) bool {
	if blockDevice(s) {
		return true
	}
	_, ok := a.secretRule(pathspec.EscapeMeta(s), false)
	return ok
}

// secretField reports whether a word names a secret file (or a raw
// disk) by its own text: what a network command must not send. A run-time
// part counts as one plain name, so $HOME/.ssh/id_rsa names a key while
// $FILE or $DIR/config do not.
func (a *analyzer) secretField(f field) bool {
	if !f.unknown() && blockDevice(f.val) {
		return true
	}
	for _, p := range readPatterns(f) {
		if f.dynamic {
			p = strings.ReplaceAll(p, "**", "x")
		}
		if _, ok := a.secretRule(p, false); ok {
			return true
		}
	}
	return false
}

// finishReads returns the reads for the verdict, one per pattern: after a
// cd, a relative pattern is also read below every directory the command
// may have changed to.
func (a *analyzer) finishReads() []Read {
	out := make([]Read, 0, len(a.readsSeen))
	seen := make(map[Read]bool, len(a.readsSeen))
	for _, r := range a.readsSeen {
		for _, v := range a.cdVariants(r.Pattern) {
			r.Pattern = v
			k := Read{Pattern: r.Pattern, RunTime: r.RunTime}
			if !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// maxCdDirs bounds the directories a command is tracked to have changed
// to; past it, a relative word may be anywhere.
const maxCdDirs = 16

// cdTo records a change of directory to the word f: a literal target
// joins every directory the command may be in so far; anything else may
// be anywhere.
func (a *analyzer) cdTo(f field) {
	a.cdGen++
	pat := f.pat
	if pat == "" && f.val != "" && !f.unknown() {
		pat = pathspec.EscapeMeta(f.val)
	}
	if f.unknown() || pat == "" || pat == "-" || strings.Contains(pat, "**") {
		a.cdAnywhere = true
		return
	}
	if strings.HasPrefix(pat, "/") || pat == "~" || strings.HasPrefix(pat, "~/") {
		a.cdDirs = append(a.cdDirs, pat)
	} else {
		for _, d := range append([]string{""}, a.cdDirs...) {
			if d != "" {
				a.cdDirs = append(a.cdDirs, d+"/"+pat)
			} else {
				a.cdDirs = append(a.cdDirs, pat)
			}
		}
	}
	if len(a.cdDirs) > maxCdDirs {
		a.cdAnywhere, a.cdDirs = true, nil
	}
}

// cdVariants are the patterns a read pattern p may name: p itself, and a
// relative p below every directory the command may have changed to (or
// anywhere, after a cd to an unknown place).
func (a *analyzer) cdVariants(p string) []string {
	if !a.cdSeen || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "**") {
		return []string{p}
	}
	out := []string{p}
	if a.cdAnywhere {
		return append(out, "**/"+p)
	}
	for _, d := range a.cdDirs {
		out = append(out, d+"/"+p)
	}
	return out
}

// namesSecret reports whether a word of source text names a secret file
// literally (for a statement whose redirection sends it over the
// network, judged before its command).
func (a *analyzer) namesSecret(text string) bool {
	for _, w := range strings.Fields(text) {
		if a.secretLiteral(strings.Trim(w, `"'<>;&|()`)) {
			return true
		}
	}
	return false
}

// isInterpreterSpec reports whether s is the rule of the interpreters
// (python, node, perl, ...), whose inline code can open any file.
func isInterpreterSpec(s *spec) bool { return s == rules["python3"] }
