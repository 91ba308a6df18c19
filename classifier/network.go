package classifier

import "strings"

// Network detectors that look inside one command: a downloaded command
// name, a token sent in a URL, a program that prints a credential, and
// rsync --delete aimed at a protected directory.

// credentialPrinters are argv prefixes that print a credential (a token,
// a secret key) on standard output; piped to a network command they are
// exfiltration, like cat of a key file.
var credentialPrinters = [][]string{
	{"gh", "auth", "token"},
	{"gcloud", "auth", "print-access-token"},
	{"gcloud", "auth", "print-identity-token"},
	{"gcloud", "auth", "application-default", "print-access-token"},
	{"az", "account", "get-access-token"},
	{"aws", "configure", "get"},
	{"aws", "configure", "export-credentials"},
	{"aws", "sts", "get-session-token"},
	{"aws", "ecr", "get-login-password"},
	{"git", "credential", "fill"},
	{"git", "credential-store", "get"},
	{"kubectl", "config", "view", "--raw"},
	{"vault", "print", "token"},
	{"op", "read"},
}

// printsCredential reports whether c prints a credential: a known
// credential printer, or gh auth status with --show-token / -t. It runs
// on every simple command of a pipeline, so it compares c's words in
// place.
func printsCredential(c *call) bool {
	for _, p := range credentialPrinters {
		if c.hasPrefix(p) {
			return true
		}
	}
	if c.hasPrefix([]string{"gh", "auth", "status"}) {
		for _, f := range c.args[3:] {
			if f.val == "-t" || f.val == "--show-token" {
				return true
			}
		}
	}
	return false
}

// hasPrefix reports whether c's words start with p, the program compared
// by its base name.
func (c *call) hasPrefix(p []string) bool {
	if len(c.args) < len(p) || len(p) == 0 || baseName(c.args[0].val) != p[0] {
		return false
	}
	for i, w := range p[1:] {
		if c.args[i+1].val != w {
			return false
		}
	}
	return true
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tokenInURL makes a network command forbidden when one of its words is
// a URL that carries a secret-named variable ($GITHUB_TOKEN, ${API_KEY}):
// the request hands the secret to whoever runs that host. A secret in a
// header (-H "Authorization: Bearer $TOKEN") is how APIs are called and
// stays dangerous.
func (a *analyzer) tokenInURL(c *call) bool {
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		if !f.param || !strings.Contains(f.raw, "://") {
			continue
		}
		if name, ok := secretParam(f.raw); ok {
			a.flag(c, i, Forbidden, "exfiltration.token", "puts $"+name+", which holds a secret, into a URL sent over the network")
			return true
		}
	}
	return false
}

// secretParam finds a parameter expansion ($NAME or ${NAME...}) with a
// secret-looking name in source text.
func secretParam(raw string) (string, bool) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '$' || i+1 >= len(raw) {
			continue
		}
		j := i + 1
		if raw[j] == '{' {
			j++
			for j < len(raw) && (raw[j] == '!' || raw[j] == '#') {
				j++
			}
		}
		k := j
		for k < len(raw) && isNameByte(raw[k]) {
			k++
		}
		if k > j && secretName(raw[j:k]) {
			return raw[j:k], true
		}
	}
	return "", false
}

// hRsync: rsync is a network command; with a --delete option (or
// --remove-source-files) it deletes files, and aimed at the home
// directory, / or a system directory it wipes them.
func hRsync(a *analyzer, c *call) {
	deletes := false
	var ops []int
	endOpts := false
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		switch {
		case !endOpts && f.val == "--":
			endOpts = true
		case !endOpts && f.unknown() && f.mayBeOption():
			deletes = true // could be --delete
			ops = append(ops, i)
		case !endOpts && (strings.HasPrefix(f.val, "--del") || strings.HasPrefix(f.val, "--remove-source")):
			deletes = true
		case !endOpts && strings.HasPrefix(f.val, "-"):
		default:
			ops = append(ops, i)
		}
	}
	if !deletes {
		return
	}
	for _, i := range ops {
		if what, ok := protectedPath(c.args[i]); ok {
			a.flag(c, i, Forbidden, "wipe.protected", "rsync with --delete can delete everything under "+what)
		}
	}
}
