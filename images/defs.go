package images

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// busyboxCandidates are where Debian's busybox-static (and busybox) put
// the binary.
var busyboxCandidates = []string{"/usr/bin/busybox", "/bin/busybox"}

// ErrNoBusybox is wrapped when no static busybox is available for the
// minimal image.
var ErrNoBusybox = errors.New("no static busybox on this host")

// findBusybox returns a static busybox binary, installing Debian's
// busybox-static with install when none is present, install is set (see
// WithInstaller) and we are root.
func findBusybox(ctx context.Context, install func(ctx context.Context, pkgs ...string) error) (string, error) {
	if p, ok := staticBusybox(); ok {
		return p, nil
	}
	if os.Geteuid() != 0 || install == nil {
		return "", fmt.Errorf("%w: install it with `sudo apt-get install -y busybox-static`", ErrNoBusybox)
	}
	if err := install(ctx, "busybox-static"); err != nil {
		return "", fmt.Errorf("%w: installing busybox-static: %w", ErrNoBusybox, err)
	}
	if p, ok := staticBusybox(); ok {
		return p, nil
	}
	return "", fmt.Errorf("%w even after installing busybox-static", ErrNoBusybox)
}

func staticBusybox() (string, bool) {
	for _, p := range busyboxCandidates {
		if isStaticELF(p) {
			return p, true
		}
	}
	return "", false
}

// isStaticELF reports whether p is an ELF executable that needs no dynamic
// loader (it will run in an image with nothing else in it).
func isStaticELF(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

// busyboxApplets asks the binary for its applets with their full paths
// (bin/sh, usr/bin/env, ...).
func busyboxApplets(ctx context.Context, bb string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bb, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", bb, err)
	}
	var applets []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		a := strings.TrimSpace(sc.Text())
		if a == "" || strings.Contains(a, "..") || strings.HasPrefix(a, "/") {
			continue
		}
		applets = append(applets, a)
	}
	return applets, sc.Err()
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// base adds what every image has: the system directories, /tmp, and
// passwd/group with root and nobody (plus extra lines).
func base(t *tree, passwd, group []string) {
	for _, d := range []string{"/dev", "/proc", "/sys", "/etc"} {
		t.dir(d, 0o755)
	}
	t.dir("/tmp", os.ModeSticky|0o777)
	pw := append([]string{"root:x:0:0:root:/root:/bin/sh", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"}, passwd...)
	gr := append([]string{"root:x:0:", "nogroup:x:65534:"}, group...)
	t.file("/etc/passwd", 0o644, []byte(strings.Join(pw, "\n")+"\n"))
	t.file("/etc/group", 0o644, []byte(strings.Join(gr, "\n")+"\n"))
}

// minimalTree is busybox and its applet links.
func minimalTree(bb string, applets []string) *tree {
	t := newTree()
	base(t, nil, nil)
	t.copyFrom("/bin/busybox", 0o755, bb)
	for _, a := range applets {
		p := "/" + a
		if p == "/bin/busybox" || t.blocked(p) {
			continue
		}
		t.symlink(p, "/bin/busybox")
	}
	return t
}

// owner is the workspace owner the host image is made for.
type owner struct {
	UID, GID  int
	User, Grp string // names for passwd/group
	Workspace string // absolute path; its parents become directories
}

// hostTree is the skeleton of the host image: passwd/group for the
// workspace owner, mount points for the host layout, the workspace path.
func hostTree(o owner, layout []layoutEntry) *tree {
	t := newTree()
	var pw, gr []string
	if o.UID != 0 && o.UID != 65534 {
		pw = append(pw, fmt.Sprintf("%s:x:%d:%d:%s:/tmp:/bin/sh", o.User, o.UID, o.GID, o.User))
	}
	if o.GID != 0 && o.GID != 65534 {
		gr = append(gr, fmt.Sprintf("%s:x:%d:", o.Grp, o.GID))
	}
	base(t, pw, gr)
	for _, e := range layout {
		switch {
		case e.Link != "":
			t.symlink(e.Path, e.Link)
		case e.IsDir:
			t.dir(e.Path, 0o755)
		default:
			t.file(e.Path, 0o644, nil)
		}
	}
	return t
}

// addWorkspace adds the workspace path and its parents as directories.
// They are conveniences, not requirements (the engine creates missing mount
// points), so they are added after the digest is taken: a host image built
// for one workspace of an owner serves every workspace of that owner.
func addWorkspace(t *tree, ws string) {
	if ws == "" || !filepath.IsAbs(ws) || t.blocked(ws) {
		return
	}
	if _, exists := t.entries[filepath.Clean(ws)]; !exists {
		t.dir(ws, 0o755)
	}
}

// lookupOwner finds names for uid and gid in the host's passwd and group
// files, falling back to "agentbox". Names are restricted to a safe set.
func lookupOwner(uid, gid int) (user, group string) {
	user, group = "agentbox", "agentbox"
	if n := lookupName("/etc/passwd", uid); n != "" {
		user = n
	}
	if n := lookupName("/etc/group", gid); n != "" {
		group = n
	}
	return user, group
}

func lookupName(file string, id int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 || f[2] != strconv.Itoa(id) || !safeName(f[0]) {
			continue
		}
		return f[0]
	}
	return ""
}

func safeName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
