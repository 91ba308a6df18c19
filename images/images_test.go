package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secrets are paths that must never reach a container, written out here
// independently of the package's own deny list.
var secrets = []string{
	"/home", "/root", "/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/ssl/private",
	"/var/run/docker.sock", "/run/docker.sock", "/run", "/var/run", "/etc/sudoers",
	"/root/.ssh", "/root/.gnupg", "/root/.aws", "/root/.config/gcloud", "/root/.docker",
}

func overlaps(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") || a == "/" || b == "/"
}

func TestHostMountsExposeNoSecrets(t *testing.T) {
	mounts := HostMounts()
	if len(mounts) == 0 {
		t.Fatal("no host mounts on this host")
	}
	var sawUsr bool
	for _, m := range mounts {
		if m.Source != m.Target {
			t.Errorf("mount %v: source and target differ", m)
		}
		if m.Source == "/usr" {
			sawUsr = true
		}
		if m.Source == "/etc" {
			t.Errorf("mount %v exposes all of /etc", m)
		}
		resolved, err := filepath.EvalSymlinks(m.Source)
		if err != nil {
			t.Errorf("mount %v: source does not resolve: %v", m, err)
			continue
		}
		for _, s := range secrets {
			for _, p := range []string{m.Source, m.Target, resolved} {
				if overlaps(p, s) {
					t.Errorf("mount %v (resolved %s) overlaps secret %s", m, resolved, s)
				}
			}
		}
		for _, el := range strings.Split(resolved, "/") {
			switch el {
			case ".ssh", ".gnupg", ".aws", "docker.sock", "podman.sock":
				t.Errorf("mount %v reaches %s", m, el)
			}
		}
	}
	if !sawUsr {
		t.Errorf("/usr is not mounted: %v", mounts)
	}
}

func TestDenied(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/", true}, {"/etc", true}, {"/etc/shadow", true}, {"/etc/gshadow", true},
		{"/etc/ssh", true}, {"/etc/ssh/ssh_host_rsa_key", true}, {"/etc/ssl/private", true},
		{"/etc/ssl", true}, // contains /etc/ssl/private
		{"/home", true}, {"/home/u/.bashrc", true}, {"/root", true}, {"/var/run/docker.sock", true},
		{"/var", true}, {"/run/podman/podman.sock", true}, {"/usr/share/x/.ssh/id_rsa", true},
		{"/usr/lib/x/.aws/credentials", true}, {"/usr/lib/gcloud/creds", true},
		{"/usr", false}, {"/usr/lib", false}, {"/etc/ssl/certs", false}, {"/etc/ld.so.cache", false},
		{"/etc/alternatives", false}, {"/lib64", false},
	}
	for _, tt := range tests {
		if got := denied(tt.path); got != tt.want {
			t.Errorf("denied(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// fakeFS is a file system of a few paths: dirs, files and symlinks.
type fakeFS map[string]string // path -> "dir", "file" or "link:TARGET"

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

func (f fakeFS) Lstat(p string) (os.FileInfo, error) {
	switch v := f[p]; {
	case v == "dir":
		return fakeInfo{filepath.Base(p), fs.ModeDir | 0o755}, nil
	case v == "file":
		return fakeInfo{filepath.Base(p), 0o644}, nil
	case strings.HasPrefix(v, "link:"):
		return fakeInfo{filepath.Base(p), fs.ModeSymlink | 0o777}, nil
	}
	return nil, os.ErrNotExist
}

func (f fakeFS) EvalSymlinks(p string) (string, error) {
	for i := 0; i < 10; i++ {
		v, ok := f[p]
		if !ok {
			return "", os.ErrNotExist
		}
		t, isLink := strings.CutPrefix(v, "link:")
		if !isLink {
			return p, nil
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", errors.New("too many links")
}

func (f fakeFS) Stat(p string) (os.FileInfo, error) {
	r, err := f.EvalSymlinks(p)
	if err != nil {
		return nil, err
	}
	return f.Lstat(r)
}

func (f fakeFS) Readlink(p string) (string, error) {
	t, ok := strings.CutPrefix(f[p], "link:")
	if !ok {
		return "", os.ErrInvalid
	}
	return t, nil
}

func (f fakeFS) Glob(pat string) ([]string, error) {
	var out []string
	for p := range f {
		if ok, _ := filepath.Match(pat, p); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func TestHostLayout(t *testing.T) {
	host := fakeFS{
		"/usr": "dir", "/usr/bin": "dir", "/usr/lib": "dir", "/usr/local/go/bin": "dir",
		"/bin": "link:usr/bin", "/lib": "link:usr/lib", "/sbin": "dir",
		"/lib64":           "link:/home/evil", // points at a secret: dropped
		"/home":            "dir",
		"/home/evil":       "dir",
		"/etc/ld.so.cache": "file",
		"/etc/localtime":   "link:/usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/UTC": "file",
		"/etc/nsswitch.conf": "link:/root/.ssh/id_rsa", "/root/.ssh/id_rsa": "file", // dropped
		"/etc/ssl/certs": "dir", "/etc/python3.11": "dir", "/etc/python3.12": "file",
		"/etc/shadow": "file", "/etc/ssh": "dir", // present, never listed
	}
	got := map[string]string{}
	for _, e := range hostLayout(host) {
		switch {
		case e.Link != "":
			got[e.Path] = "link:" + e.Link
		case e.IsDir:
			got[e.Path] = "dir"
		default:
			got[e.Path] = "file"
		}
	}
	want := map[string]string{
		"/usr": "dir", "/sbin": "dir", "/bin": "link:usr/bin", "/lib": "link:usr/lib",
		"/etc/ld.so.cache": "file", "/etc/localtime": "file", "/etc/ssl/certs": "dir",
		"/etc/python3.11": "dir", "/etc/python3.12": "file",
	}
	if len(got) != len(want) {
		t.Errorf("layout = %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("layout[%s] = %q, want %q", k, got[k], v)
		}
	}
	var mounts []string
	for _, m := range hostMounts(host) {
		mounts = append(mounts, m.Source)
	}
	if strings.Join(mounts, " ") != "/etc/ld.so.cache /etc/localtime /etc/python3.11 /etc/python3.12 /etc/ssl/certs /sbin /usr" {
		t.Errorf("mounts = %v", mounts)
	}
	if p := hostPath(host); p != defaultPath+":/usr/local/go/bin" {
		t.Errorf("hostPath = %s", p)
	}
}

func TestMinimalTree(t *testing.T) {
	tr := minimalTree("/usr/bin/busybox", []string{"bin/sh", "bin/ls", "usr/bin/env", "sbin/ifconfig", "bin/busybox", "../evil"})
	for p, want := range map[string]string{"/bin/sh": "/bin/busybox", "/usr/bin/env": "/bin/busybox", "/sbin/ifconfig": "/bin/busybox"} {
		if e := tr.entries[p]; e.Link != want {
			t.Errorf("%s -> %q, want %q", p, e.Link, want)
		}
	}
	if e := tr.entries["/bin/busybox"]; e.From != "/usr/bin/busybox" || e.Mode != 0o755 {
		t.Errorf("/bin/busybox = %+v", e)
	}
	if e := tr.entries["/tmp"]; e.Mode != os.ModeDir|os.ModeSticky|0o777 {
		t.Errorf("/tmp mode %v", e.Mode)
	}
	if !strings.HasPrefix(string(tr.entries["/etc/passwd"].Data), "root:x:0:0:") {
		t.Errorf("passwd: %q", tr.entries["/etc/passwd"].Data)
	}
}

func TestHostTree(t *testing.T) {
	layout := []layoutEntry{{Path: "/usr", IsDir: true}, {Path: "/bin", Link: "usr/bin"}, {Path: "/etc/ssl/certs", IsDir: true}, {Path: "/etc/ld.so.cache"}}
	tests := []struct {
		name       string
		o          owner
		wantPasswd string
		wantGroup  string
		wantDirs   []string
	}{
		{
			name:       "ordinary user",
			o:          owner{UID: 1000, GID: 1001, User: "dev", Grp: "devs", Workspace: "/home/dev/src/proj"},
			wantPasswd: "dev:x:1000:1001:dev:/tmp:/bin/sh\n",
			wantGroup:  "devs:x:1001:\n",
			wantDirs:   []string{"/home", "/home/dev", "/home/dev/src", "/home/dev/src/proj"},
		},
		{
			name:     "root owner adds no line",
			o:        owner{UID: 0, GID: 0, User: "root", Grp: "root", Workspace: "/work/main"},
			wantDirs: []string{"/work", "/work/main"},
		},
		{
			name:     "workspace below a symlinked root is left alone",
			o:        owner{UID: 0, GID: 0, Workspace: "/bin/x"},
			wantDirs: []string{"/usr", "/etc/ssl", "/etc/ssl/certs", "/tmp"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := hostTree(tt.o, layout)
			addWorkspace(tr, tt.o.Workspace)
			pw := string(tr.entries["/etc/passwd"].Data)
			gr := string(tr.entries["/etc/group"].Data)
			if tt.wantPasswd != "" && !strings.HasSuffix(pw, tt.wantPasswd) {
				t.Errorf("passwd = %q, want it to end with %q", pw, tt.wantPasswd)
			}
			if tt.wantPasswd == "" && strings.Count(pw, "\n") != 2 {
				t.Errorf("passwd = %q, want only root and nobody", pw)
			}
			if tt.wantGroup != "" && !strings.HasSuffix(gr, tt.wantGroup) {
				t.Errorf("group = %q, want it to end with %q", gr, tt.wantGroup)
			}
			for _, d := range tt.wantDirs {
				if !tr.entries[d].Mode.IsDir() {
					t.Errorf("%s is not a directory in the image", d)
				}
			}
			if e := tr.entries["/bin"]; e.Link != "usr/bin" {
				t.Errorf("/bin = %+v, want symlink usr/bin", e)
			}
			if e, ok := tr.entries["/etc/ld.so.cache"]; !ok || !e.Mode.IsRegular() {
				t.Errorf("/etc/ld.so.cache mount point = %+v", e)
			}
			if _, ok := tr.entries["/bin/x"]; ok {
				t.Error("created a path below the /bin symlink")
			}
		})
	}
}

func TestTreeDigestAndMaterialize(t *testing.T) {
	mk := func() *tree {
		tr := newTree()
		base(tr, nil, nil)
		tr.file("/etc/motd", 0o644, []byte("hi"))
		tr.symlink("/bin/sh", "/bin/busybox")
		return tr
	}
	d1, _ := mk().digest()
	d2, _ := mk().digest()
	if d1 != d2 {
		t.Fatalf("digest not stable: %s %s", d1, d2)
	}
	changed := mk()
	changed.file("/etc/motd", 0o644, []byte("ho"))
	moded := mk()
	moded.file("/etc/motd", 0o600, []byte("hi"))
	relinked := mk()
	relinked.symlink("/bin/sh", "/bin/bash")
	for name, tr := range map[string]*tree{"content": changed, "mode": moded, "link": relinked} {
		if d, _ := tr.digest(); d == d1 {
			t.Errorf("digest unchanged after a %s change", name)
		}
	}

	dir := t.TempDir()
	if err := mk().materialize(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "tmp"))
	if err != nil || fi.Mode() != fs.ModeDir|fs.ModeSticky|0o777 {
		t.Errorf("tmp: %v %v", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "bin/sh")); err != nil || l != "/bin/busybox" {
		t.Errorf("bin/sh -> %q %v", l, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/motd")); err != nil || string(b) != "hi" {
		t.Errorf("etc/motd = %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "etc/passwd")); err != nil || fi.Mode() != 0o644 {
		t.Errorf("etc/passwd mode: %v %v", fi, err)
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"minimal": Minimal, "host": Host, "agentbox/minimal:latest": Minimal, Host: Host, "other/img": "other/img",
	} {
		if got := canonical(in); got != want {
			t.Errorf("canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]bool{"dev": true, "a.b-c_d": true, "": false, "x:y": false, "a\nb": false, strings.Repeat("a", 40): false} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %v", in, got)
		}
	}
}

func TestWriteTar(t *testing.T) {
	tr := newTree()
	base(tr, nil, nil)
	tr.symlink("/bin/sh", "/bin/busybox")
	tr.file("/etc/motd", 0o640, []byte("hello"))
	var buf bytes.Buffer
	if err := tr.writeTar(&buf); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	rd := tar.NewReader(&buf)
	for {
		h, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		if h.Name == "etc/motd" {
			b, _ := io.ReadAll(rd)
			if string(b) != "hello" {
				t.Errorf("etc/motd = %q", b)
			}
		}
	}
	if h := got["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("tmp/ = %+v", h)
	}
	if h := got["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
		t.Errorf("bin/sh = %+v", h)
	}
	if h := got["etc/motd"]; h == nil || h.Mode != 0o640 {
		t.Errorf("etc/motd = %+v", h)
	}
	if got["bin/"] == nil || got["etc/passwd"] == nil {
		t.Errorf("missing parents or passwd: %v", got)
	}
}

func TestHostDigestIgnoresWorkspacePathButNotOwner(t *testing.T) {
	spec := func(uid int, ws string) *spec {
		t.Helper()
		o := &options{owner: &owner{UID: uid, GID: uid, User: "u", Grp: "g", Workspace: ws}}
		s, err := makeSpec(context.Background(), Host, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := spec(1000, "/srv/a/proj"), spec(1000, "/srv/b/other"), spec(1001, "/srv/a/proj")
	if a.digest != b.digest {
		t.Errorf("same owner, different workspace: digests %s and %s differ (every workspace would rebuild)", a.digest, b.digest)
	}
	if a.digest == c.digest {
		t.Errorf("different owners share digest %s", a.digest)
	}
	if !a.tree.entries["/srv/a/proj"].Mode.IsDir() || !b.tree.entries["/srv/b/other"].Mode.IsDir() {
		t.Error("workspace path missing from the host image tree")
	}
	if a.labels[LabelUID] != "1000" || c.labels[LabelUID] != "1001" {
		t.Errorf("uid labels %v %v", a.labels, c.labels)
	}
}

func TestSecretPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/home/u/go/pkg/mod":       false,
		"/root/.cargo/registry":    false,
		"/var/cache/pnpm":          false,
		"/home":                    true,
		"/home/u/.ssh/cache":       true,
		"/home/u/.aws":             true,
		"/etc/ssh":                 true,
		"/etc":                     true,
		"/etc/npm/cache":           true,
		"/":                        true,
		"/run/user/1000/cache":     true,
		"/var/lib/docker/overlay2": true,
		"/var/run":                 true,
		"/proc/1/root":             true,
		"/opt/cache/gcloud/x":      true,
	} {
		if got := SecretPath(p); got != want {
			t.Errorf("SecretPath(%q) = %v, want %v", p, got, want)
		}
	}
}
