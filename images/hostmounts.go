package images

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/config"
)

// HostMount is one host path the runner bind-mounts read-only into a
// container of the host image, at Target (always equal to Source today).
type HostMount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// hostRoots are the toolchain directories of the host. Each is either
// bind-mounted (a real directory) or recreated in the image as the same
// symlink (merged-/usr systems: /bin -> usr/bin).
var hostRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}

// safeEtc lists the /etc entries a toolchain needs and that hold no
// secrets. Globs are expanded. /etc/passwd and /etc/group are not here: the
// image carries generated ones.
var safeEtc = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/alternatives",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates.conf",
	"/etc/localtime", "/etc/timezone",
	"/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/protocols", "/etc/services", "/etc/mime.types",
	"/etc/magic", "/etc/magic.mime",
	"/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/etc/python3", "/etc/python3.*", "/etc/perl", "/etc/terminfo",
	"/etc/bash.bashrc", "/etc/inputrc",
}

// deniedPaths may never be mounted, be below a mount, or have a mount below
// them that reaches them. Checked on both the listed and the resolved path.
var deniedPaths = []string{
	"/home", "/root", "/run", "/var/run", "/proc", "/sys", "/dev", "/boot", "/tmp", "/var",
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssh", "/etc/ssl/private", "/etc/docker", "/etc/containerd", "/etc/kubernetes",
	"/etc/security", "/etc/pam.d", "/etc/passwd", "/etc/group", "/etc/subuid", "/etc/subgid",
	"/etc/gitconfig", "/etc/pip.conf", "/etc/npmrc", "/etc/environment", "/etc/machine-id",
	"/var/lib/docker", "/var/run/docker.sock", "/run/docker.sock",
}

// deniedNames are path elements that mark secrets wherever they appear.
var deniedNames = []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials", "gcloud", "docker.sock", "podman.sock", "containerd.sock"}

// denied reports whether a path is a secret, lies below one, or contains
// one (a mount of /etc would expose /etc/shadow).
func denied(p string) bool {
	p = filepath.Clean(p)
	if p == "/" || p == "/etc" {
		return true
	}
	for _, d := range deniedPaths {
		if config.Within(p, d) || config.Within(d, p) {
			return true
		}
	}
	return hasDeniedName(p)
}

// hasDeniedName reports whether an element of p is one of deniedNames.
func hasDeniedName(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if slices.Contains(deniedNames, el) {
			return true
		}
	}
	return false
}

// fsys is the subset of the host file system the layout reads; tests fake it.
type fsys interface {
	Lstat(string) (os.FileInfo, error)
	Stat(string) (os.FileInfo, error)
	Readlink(string) (string, error)
	EvalSymlinks(string) (string, error)
	Glob(string) ([]string, error)
}

type osFS struct{}

func (osFS) Lstat(p string) (os.FileInfo, error)   { return os.Lstat(p) }
func (osFS) Stat(p string) (os.FileInfo, error)    { return os.Stat(p) }
func (osFS) Readlink(p string) (string, error)     { return os.Readlink(p) }
func (osFS) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }
func (osFS) Glob(p string) ([]string, error)       { return filepath.Glob(p) }

// layoutEntry is one top-level piece of the host layout.
type layoutEntry struct {
	Path  string
	Link  string // non-empty: recreate as this symlink, no mount
	IsDir bool   // mount point kind when Link is empty
}

// hostLayout says, for this host, which paths are mounted (with their kind)
// and which are recreated as symlinks. Paths that are missing, resolve to a
// denied place or are neither file nor directory are left out: fail closed.
func hostLayout(fs fsys) []layoutEntry {
	var out []layoutEntry
	for _, p := range hostRoots {
		fi, err := fs.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := fs.Readlink(p)
			if err != nil {
				continue
			}
			// A symlink to another root (usr/bin) is recreated as is;
			// anything else is resolved and mounted if it is safe.
			if resolved, err := fs.EvalSymlinks(p); err == nil && !denied(resolved) && isUnderRoots(resolved) {
				out = append(out, layoutEntry{Path: p, Link: target})
			}
			continue
		}
		if fi.IsDir() && !denied(p) {
			out = append(out, layoutEntry{Path: p, IsDir: true})
		}
	}
	seen := map[string]bool{}
	for _, pat := range safeEtc {
		matches := []string{pat}
		if strings.ContainsAny(pat, "*?[") {
			matches, _ = fs.Glob(pat)
		}
		for _, p := range matches {
			if seen[p] || denied(p) {
				continue
			}
			resolved, err := fs.EvalSymlinks(p)
			if err != nil || denied(resolved) {
				continue
			}
			fi, err := fs.Stat(p)
			if err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
				continue
			}
			seen[p] = true
			out = append(out, layoutEntry{Path: p, IsDir: fi.IsDir()})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func isUnderRoots(p string) bool {
	for _, r := range hostRoots {
		if config.Within(p, r) {
			return true
		}
	}
	return false
}

// HostMounts lists the host paths to bind-mount read-only into a container
// of the Host image: the toolchain directories that are real directories on
// this host and the safe /etc entries that exist. It never lists /home,
// /root, /etc/shadow, /etc/gshadow, SSH or GPG keys, cloud credentials or a
// container engine's socket. The image built by Build on this host has a
// mount point for each. Safe for concurrent use.
func HostMounts() []HostMount {
	return hostMounts(osFS{})
}

func hostMounts(fs fsys) []HostMount {
	var out []HostMount
	for _, e := range hostLayout(fs) {
		if e.Link == "" {
			out = append(out, HostMount{Source: e.Path, Target: e.Path})
		}
	}
	return out
}

// toolchainDirs are directories below the mounted roots that hold
// toolchains outside the standard PATH; HostPath adds those that exist.
var toolchainDirs = []string{"/usr/local/go/bin", "/usr/lib/go/bin", "/usr/local/cargo/bin"}

// HostPath is the PATH for commands in the Host image: the standard
// directories plus the host's toolchain directories that exist under the
// mounted roots (for example /usr/local/go/bin). The image's Env carries it.
func HostPath() string {
	return hostPath(osFS{})
}

func hostPath(fs fsys) string {
	p := defaultPath
	for _, d := range toolchainDirs {
		if !isUnderRoots(d) || denied(d) {
			continue
		}
		if fi, err := fs.Stat(d); err == nil && fi.IsDir() {
			p += ":" + d
		}
	}
	return p
}

// homeRoots are denied paths that hold homes and caches: SecretPath
// refuses them and what contains them, not what lies below them.
var homeRoots = map[string]bool{"/home": true, "/root": true, "/tmp": true, "/var": true}

// SecretPath reports whether a host directory may not be mounted into a
// sandbox as a cache: it is, contains or lies below a system secret of
// the deny list (/etc/shadow, /run, the engine's socket, …), has a
// credential directory name anywhere in it (.ssh, .gnupg, .aws, .netrc,
// …), or is or contains a home root (/home, /root) or /tmp or /var. A
// directory below a home root is not refused for that alone.
func SecretPath(p string) bool {
	p = filepath.Clean(p)
	if p == "/" || p == "/etc" || strings.HasPrefix(p, "/etc/") {
		return true
	}
	for _, d := range deniedPaths {
		if config.Within(d, p) || (!homeRoots[d] && config.Within(p, d)) {
			return true
		}
	}
	return hasDeniedName(p)
}
