package classifier

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call is one argv to judge: a simple command, or the command a wrapper
// (env, xargs, timeout, find -exec, ...) runs.
type call struct {
	args []field
	text string // source text of the simple command
	off  int
	stmt *syntax.Stmt
	// extra is true when a wrapper (xargs) appends arguments unknown
	// before run time after args.
	extra bool
	depth int // wrapper depth
}

func (c *call) name() string { return c.args[0].val }

// flag reports a finding on argument i (or the whole call when i < 0).
func (a *analyzer) flag(c *call, i int, cl Class, rule, msg string) {
	if i >= 0 && i < len(c.args) && c.args[i].off >= c.off {
		a.add(cl, rule, c.args[i].raw, c.args[i].off, msg)
		return
	}
	a.add(cl, rule, c.text, c.off, msg)
}

// trustedDirs hold the system's own programs; a program called by path
// from elsewhere may be anything.
var trustedDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/sbin": true, "/usr/sbin": true, "/usr/local/bin": true,
}

const maxWrapperDepth = 8

// judge classifies one argv.
func (a *analyzer) judge(c *call) {
	if len(c.args) == 0 {
		return
	}
	if c.depth > 0 && a.inPart > 0 {
		a.parts[a.inPart-1].wraps = true
	}
	if c.depth > maxWrapperDepth {
		a.flag(c, -1, Dangerous, "cap.depth", "wrappers are nested too deeply to analyse")
		return
	}
	f0 := c.args[0]
	if f0.unknown() {
		a.flag(c, 0, Dangerous, "command.dynamic", "the program to run is only known at run time")
		return
	}
	name := f0.val
	if strings.Contains(name, "/") {
		dir, base := path.Split(name)
		dir = path.Clean(dir)
		if !trustedDirs[dir] {
			// Forbidden detectors still look at the program's name.
			if s, ok := lookup(base); ok && s.kind == kForbidden {
				a.flag(c, 0, Forbidden, s.rule, s.msg)
				return
			}
			a.flag(c, 0, Dangerous, "command.path", "runs "+name+", a program outside the system directories")
			return
		}
		name = base
	}
	for _, n := range a.opts.forbidden {
		if n == name {
			a.flag(c, 0, Forbidden, "config.forbidden", name+" is forbidden by configuration")
			return
		}
	}
	cfgDangerous := slices.Contains(a.opts.dangerous, name)
	if cfgDangerous {
		a.flag(c, 0, Dangerous, "config.dangerous", name+" is dangerous by configuration")
	}
	s, known := lookup(name)
	if !cfgDangerous && a.configReadOnly(c, name) {
		a.checkSensitive(c)
		return
	}
	if a.cur != nil && !a.cur.credential {
		for _, f := range c.args[1:] {
			if sensitivePath(f.val) {
				a.cur.credential = true
			}
		}
	}
	if a.cur != nil && decodes(name, c.args) {
		a.cur.decoder = true
	}
	if a.cur != nil && (name == "printenv" || name == "env") && len(c.args) == 1 {
		a.cur.envDump = true
	}
	if a.cur != nil {
		for _, f := range c.args[1:] {
			if name == "printenv" && secretName(f.val) || name == "gpg" && strings.HasPrefix(f.val, "--export-secret") {
				a.cur.credential = true
			}
		}
	}
	if !known {
		a.flag(c, 0, Dangerous, "command.unknown", name+" is not a known read-only program")
		return
	}
	if c.extra && s.kind != kReadOnly {
		a.flag(c, -1, Dangerous, "argument.unknown", "arguments appended at run time could be options of "+name)
	}
	if s.net {
		a.netSeen++
		if a.cur != nil {
			a.cur.network = true
			a.cur.netSend = true
		}
		a.exfiltration(c, name)
	}
	switch s.kind {
	case kForbidden:
		a.flag(c, 0, Forbidden, s.rule, s.msg)
		return
	case kDangerous:
		a.flag(c, 0, Dangerous, s.rule, s.msg)
		if s.fn != nil {
			s.fn(a, c)
		}
		return
	case kCustom:
		s.fn(a, c)
		return
	}
	// kReadOnly: generic option check.
	a.checkOptions(c, s.g)
	a.checkSensitive(c)
}

// lookup finds the rule for a program name.
func lookup(name string) (*spec, bool) {
	if s, ok := rules[name]; ok {
		return s, true
	}
	if strings.HasPrefix(name, "mkfs.") || strings.HasPrefix(name, "mke2fs") {
		return rules["mkfs"], true
	}
	if isPython(name) {
		return rules["python3"], true
	}
	return nil, false
}

func isPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	if !ok {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !(rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			return false
		}
	}
	return true
}

// configReadOnly matches the configured read-only prefixes.
func (a *analyzer) configReadOnly(c *call, name string) bool {
	for _, p := range a.opts.readOnly {
		if len(p) > len(c.args) || p[0] != name {
			continue
		}
		ok := true
		for i := 1; i < len(p); i++ {
			if c.args[i].unknown() || c.args[i].val != p[i] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// checkSensitive makes a read of a credential file dangerous.
func (a *analyzer) checkSensitive(c *call) {
	for i := 1; i < len(c.args); i++ {
		if sensitivePath(c.args[i].val) {
			a.flag(c, i, Dangerous, "read.credential", "reads a credential or secret file")
			if a.cur != nil {
				a.cur.credential = true
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// exfiltration makes a network command that names a credential file
// forbidden.
func (a *analyzer) exfiltration(c *call, name string) {
	skip := map[string]bool{}
	switch name {
	case "ssh":
		return // -i key authenticates; it does not send the key
	case "scp", "sftp":
		skip["-i"], skip["-F"] = true, true
	case "rsync":
		skip["-e"], skip["--rsh"] = true, true
	case "curl":
		for _, o := range []string{"--cert", "-E", "--key", "--cacert", "--capath", "--netrc-file", "--proxy-cert", "--proxy-key"} {
			skip[o] = true
		}
	}
	if c.stmt != nil {
		for _, r := range c.stmt.Redirs {
			if r.Op == syntax.RdrIn && r.Word != nil {
				if t, _ := a.at(r.Word); sensitivePath(t) {
					a.flag(c, -1, Forbidden, "exfiltration.credential", "sends a credential or private key over the network")
					return
				}
			}
		}
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		o, _, _ := strings.Cut(f.val, "=")
		if skip[o] {
			if !strings.Contains(f.val, "=") {
				i++
			}
			continue
		}
		if sensitivePath(f.val) || sensitivePath(f.raw) {
			a.flag(c, i, Forbidden, "exfiltration.credential", "sends a credential or private key over the network")
			return
		}
		if strings.Contains(f.raw, "/proc/self/environ") || strings.Contains(f.raw, "$(env)") || strings.Contains(f.raw, "$(printenv)") {
			a.flag(c, i, Forbidden, "exfiltration.environment", "sends the environment, which holds tokens, over the network")
			return
		}
	}
}

// inner judges the argv a wrapper runs, args[i:].
func (a *analyzer) inner(c *call, i int) {
	if i >= len(c.args) {
		return
	}
	n := &call{args: c.args[i:], text: c.text, off: c.off, stmt: c.stmt, extra: c.extra, depth: c.depth + 1}
	a.judge(n)
}

// grantPrefix is the argv prefix an "always allow" grant is keyed by.
func grantPrefix(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	name := argv[0]
	if strings.ContainsAny(name, "$`(") {
		return nil
	}
	if strings.Contains(name, "/") {
		name = path.Base(name)
	}
	out := []string{name}
	subs := 0
	switch name {
	case "git", "go", "cargo", "docker", "podman", "kubectl", "gh", "pip", "pip3", "apt", "apt-get",
		"brew", "systemctl", "helm", "terraform", "uv", "poetry", "bundle", "gem", "dotnet", "make", "npx":
		subs = 1
	case "npm", "pnpm", "yarn", "bun":
		subs = 1
		if len(argv) > 2 && (argv[1] == "run" || argv[1] == "run-script") {
			subs = 2
		}
	}
	for _, w := range argv[1:] {
		if subs == 0 {
			break
		}
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "$`(*?[") {
			break
		}
		out = append(out, w)
		subs--
	}
	return out
}

// decodes reports whether the call decodes or unscrambles its input, so
// that piping its output into a shell hides what runs.
func decodes(name string, args []field) bool {
	switch name {
	case "rev", "tr", "uudecode", "gunzip", "zcat", "bzcat", "xzcat", "openssl", "gpg", "unxz", "bunzip2", "zstd", "unzstd":
		return true
	case "base64", "base32", "basenc", "xxd":
		for _, f := range args[1:] {
			v := f.val
			if v == "--decode" || v == "-r" || v == "--revert" || strings.HasPrefix(v, "--d") ||
				strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v, "dDr") {
				return true
			}
		}
	}
	return false
}
