package classifier

import (
	"path"
	"strings"
)

// harmlessEnvNames may be set before a read-only command without changing
// what it does beyond formatting.
var harmlessEnvNames = map[string]bool{
	"TZ": true, "LANG": true, "LANGUAGE": true, "NO_COLOR": true, "CLICOLOR": true,
	"CLICOLOR_FORCE": true, "FORCE_COLOR": true, "COLUMNS": true, "LINES": true,
	"COLORTERM": true, "TIME_STYLE": true, "QUOTING_STYLE": true, "POSIXLY_CORRECT": true,
	"GREP_COLOR": true, "GREP_COLORS": true, "LS_COLORS": true,
}

func harmlessEnv(name string) bool {
	return harmlessEnvNames[name] || strings.HasPrefix(name, "LC_")
}

// loaderEnv reports whether setting name before a command changes which
// program runs or injects code into it (PATH, LD_PRELOAD, BASH_ENV, ...),
// so that the command's name no longer says what runs.
func loaderEnv(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "IFS", "PS4", "PROMPT_COMMAND", "GCONV_PATH",
		"NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "GOFLAGS":
		return true
	}
	for _, p := range []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// secretName reports whether an environment variable name looks like it
// holds a secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, m := range []string{"KEY", "TOKEN", "SECRET", "PASS", "CRED", "AUTH", "SESSION", "COOKIE"} {
		if strings.Contains(n, m) {
			return true
		}
	}
	return false
}

// harmlessSink is a redirection target that is not a file write.
func harmlessSink(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2":
		return true
	}
	return false
}

var blockDevicePrefixes = []string{
	"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk/", "mapper/", "dm-", "md", "loop",
	"sr", "sg", "nbd", "zram", "rbd", "ram", "fd0", "mem", "kmem", "port", "root", "bcache", "ubd", "mtd",
}

// blockDevice reports whether p names a disk, partition or raw memory
// device, after cleaning.
func blockDevice(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	rest, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	if rest == "md" || rest == "disk" || rest == "mapper" {
		return false
	}
	for _, pre := range blockDevicePrefixes {
		if strings.HasPrefix(rest, pre) {
			return true
		}
	}
	return false
}

// sensitiveMarks are substrings of paths that hold credentials or keys.
var sensitiveMarks = []string{
	".ssh/id_", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".ssh/authorized_keys",
	".aws/credentials", ".aws/config", ".netrc", ".git-credentials", ".docker/config.json",
	".kube/config", ".gnupg", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", ".npmrc", ".pypirc",
	".config/gh/hosts.yml", ".vault-token", "/environ", ".pgpass", ".my.cnf", "credentials.json",
	".bash_history", ".zsh_history", ".password-store", "private_key", ".p12", ".pfx",
	"ssh_host_", "/run/secrets", "serviceaccount/token", ".keychain", "keyring",
}

// sensitivePath reports whether s names a credential or secret file, or
// a raw disk (which holds every file's data).
func sensitivePath(s string) bool {
	if blockDevice(s) {
		return true
	}
	for _, m := range sensitiveMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	t := strings.TrimRight(s, `"'/`)
	for _, dir := range []string{".ssh", ".aws", ".gnupg", ".kube", ".docker", ".password-store"} {
		if strings.Contains(s, dir+"/") || strings.HasSuffix(t, dir) {
			return true
		}
	}
	// .env files (".env", "x/.env", ".env.local"), not ".envrc".
	for i := 0; ; {
		j := strings.Index(s[i:], ".env")
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || strings.ContainsRune("/@='\"= :", rune(s[j-1]))
		end := j + 4
		after := end == len(s) || strings.ContainsRune(".'\" ", rune(s[end]))
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var systemDirs = map[string]bool{
	"/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true,
	"/lib32": true, "/lib64": true, "/libx32": true, "/opt": true, "/proc": true, "/root": true,
	"/run": true, "/sbin": true, "/srv": true, "/sys": true, "/usr": true, "/var": true,
	"/snap": true, "/media": true, "/mnt": true, "/Users": true, "/System": true, "/Library": true,
	"/Applications": true, "/private": true, "/usr/bin": true, "/usr/lib": true, "/usr/lib64": true,
	"/usr/sbin": true, "/usr/local": true, "/usr/share": true, "/usr/include": true,
	"/usr/local/bin": true, "/var/lib": true, "/var/log": true, "/etc/ssh": true,
}

// protectedPath reports whether an operand of a recursive rm, chmod or
// chown names /, the home directory or a top-level system directory.
// raw is the source text, for $HOME forms.
func protectedPath(f field) (string, bool) {
	v := f.val
	if f.dynamic {
		// Only $HOME and friends are recognisable.
		r := strings.Trim(f.raw, `"'`)
		// ${HOME:?}, ${HOME%/} and friends are still $HOME.
		if rest, ok := strings.CutPrefix(r, "${HOME"); ok && rest != "" && !isNameByte(rest[0]) {
			if k := strings.IndexByte(rest, '}'); k >= 0 {
				r = "$HOME" + rest[k+1:]
			}
		}
		for _, h := range []string{"$HOME", "${HOME}", "~"} {
			if rest, ok := strings.CutPrefix(r, h); ok {
				rest = strings.Trim(rest, `"'`)
				if rest == "" || rest == "/" || rest == "/*" || rest == "/." || rest == "/.*" || strings.HasPrefix(rest, "/..") {
					return "the home directory", true
				}
			}
		}
		return "", false
	}
	if v == "~" {
		return "the home directory", true
	}
	if strings.HasPrefix(v, "~") && !strings.Contains(v, "/") {
		return "a user's home directory", true
	}
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		rest = strings.TrimRight(rest, "/")
		if rest == "" || rest == "*" || rest == "." || rest == ".*" || rest == ".." || strings.HasPrefix(rest, "../") {
			return "the home directory", true
		}
		return "", false
	}
	if !strings.HasPrefix(v, "/") {
		return "", false
	}
	c := path.Clean(v)
	for strings.HasSuffix(c, "/*") || strings.HasSuffix(c, "/.*") {
		c = path.Dir(c)
	}
	if c == "/" || c == "/*" {
		return "the root directory", true
	}
	if systemDirs[c] {
		return "the system directory " + c, true
	}
	if d := path.Dir(c); d == "/home" || d == "/Users" {
		return "the home directory " + c, true
	}
	return "", false
}
