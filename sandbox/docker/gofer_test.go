package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/sandbox/initproc"
)

// fakeProc builds a /proc-like tree: one directory per pid with status,
// cmdline and, for pids given a root, mountinfo and a root link.
type fakeProcess struct {
	ppid, uid int
	argv      []string
	root      string // target of the "root" link, "" for none
	mountinfo string
}

func fakeProc(t *testing.T, procs map[string]fakeProcess) string {
	t.Helper()
	dir := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(dir, pid)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		status := "Name:\tx\nPPid:\t" + strconv.Itoa(p.ppid) + "\nUid:\t" + strconv.Itoa(p.uid) + "\t" + strconv.Itoa(p.uid) + "\t0\t0\n"
		must(t, os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644))
		must(t, os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(p.argv, "\x00")+"\x00"), 0o644))
		if p.root != "" {
			must(t, os.Symlink(p.root, filepath.Join(d, "root")))
			must(t, os.WriteFile(filepath.Join(d, "mountinfo"), []byte(p.mountinfo), 0o644))
		}
	}
	return dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const cid = "d74afc0fc0061aa63a784e773acd6b36a0ed5d67f154710ef3da5a5e8a0c87fb"

func goferArgv(bundleID string) []string {
	return []string{"runsc-gofer", "--root=/run/x", "--network=none", "gofer", "--bundle", "/run/exec/agentbox/" + bundleID, "--spec-fd=4"}
}

func TestFindGofer(t *testing.T) {
	tests := []struct {
		name  string
		procs map[string]fakeProcess
		want  string // pid found, "" for an error
	}{
		{"the gofer", map[string]fakeProcess{
			"100": {ppid: 1, argv: []string{"containerd-shim-runc-v2"}},
			"101": {ppid: 100, argv: goferArgv(cid)},
			"102": {ppid: 100, argv: []string{"runsc-sandbox"}},
		}, "101"},
		{"bundle given with =", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 100, argv: []string{"runsc-gofer", "gofer", "--bundle=/b/" + cid}},
			"102": {ppid: 100},
		}, "101"},
		{"a look-alike in another container (other parent)", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 555, argv: goferArgv(cid)},
			"102": {ppid: 100},
		}, ""},
		{"a look-alike that is not root", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 100, uid: 4242, argv: goferArgv(cid)},
			"102": {ppid: 100},
		}, ""},
		{"another container's gofer", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 100, argv: goferArgv("other")},
			"102": {ppid: 100},
		}, ""},
		{"not a gofer", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 100, argv: []string{"sh", "--bundle", "/b/" + cid}},
			"102": {ppid: 100},
		}, ""},
		{"two gofers", map[string]fakeProcess{
			"100": {ppid: 1},
			"101": {ppid: 100, argv: goferArgv(cid)},
			"103": {ppid: 100, argv: goferArgv(cid)},
			"102": {ppid: 100},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeProc(t, tt.procs)
			f, err := findGofer(root, 102, cid)
			if tt.want == "" {
				if err == nil {
					f.Close()
					t.Fatalf("found %s, want an error", f.Name())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if filepath.Base(f.Name()) != tt.want {
				t.Errorf("found %s, want pid %s", f.Name(), tt.want)
			}
		})
	}
}

func TestVerifyThrough(t *testing.T) {
	// The gofer's root: a tree holding the workspace and a .git in it.
	root := t.TempDir()
	ws := filepath.Join(root, "work", "ws")
	must(t, os.MkdirAll(filepath.Join(ws, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "init"), []byte("x"), 0o755))
	decoy := t.TempDir()
	id := func(p string) (uint64, uint64) {
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		return uint64(st.Dev), st.Ino
	}
	wsDev, wsIno := id(ws)
	gitDev, gitIno := id(filepath.Join(ws, ".git"))
	initDev, initIno := id(filepath.Join(root, "init"))
	_, decoyIno := id(decoy)
	const mi = `150 148 0:44 / / rw,relatime - overlay overlay rw
107 150 254:0 /tmp/wsb /work/ws rw,relatime - ext4 /dev/vda rw
111 107 254:0 /tmp/wsb/.git /work/ws/.git rw,relatime - ext4 /dev/vda rw
112 150 254:0 /x /init rw,relatime - ext4 /dev/vda rw
110 150 254:0 /c/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw
`
	want := []initproc.ExpectedMount{
		{Target: "/work/ws", Dev: wsDev, Ino: wsIno, Dir: true, HostID: true},
		// Read-only is init's to check (the gofer's mounts stay rw).
		{Target: "/work/ws/.git", Dev: gitDev, Ino: gitIno, Dir: true, RO: true, HostID: true},
		{Target: "/init", Dev: initDev, Ino: initIno, RO: true, HostID: true},
	}
	swapped := append([]initproc.ExpectedMount(nil), want...)
	swapped[1].Ino = decoyIno
	tests := []struct {
		name  string
		mi    string
		want  []initproc.ExpectedMount
		error string
	}{
		{"as pinned", mi, want, ""},
		{"another object at a mount point", mi, swapped, "inode"},
		{"an extra mount in the gofer", mi + "113 107 0:50 / /work/ws/sock rw - tmpfs tmpfs rw\n", want, "not asked for"},
		{"a mount missing in the gofer", strings.Replace(mi, "111 107", "#", 1)[:0] + strings.Join(dropLines(mi, "111 "), ""), want, "not mounted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := fakeProc(t, map[string]fakeProcess{"7": {root: root, mountinfo: tt.mi}})
			dir, err := os.Open(filepath.Join(proc, "7"))
			must(t, err)
			defer dir.Close()
			err = verifyThrough(dir, tt.want)
			switch {
			case tt.error == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.error != "" && (err == nil || !strings.Contains(err.Error(), tt.error) || !errors.Is(err, initproc.ErrMounts)):
				t.Fatalf("got %v, want an error containing %q", err, tt.error)
			}
		})
	}
	t.Run("symlink at a mount point is not followed", func(t *testing.T) {
		r2 := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(r2, "work"), 0o755))
		must(t, os.Symlink(ws, filepath.Join(r2, "work", "ws")))
		proc := fakeProc(t, map[string]fakeProcess{"7": {root: r2, mountinfo: "150 148 0:44 / / rw - overlay overlay rw\n107 150 254:0 /x /work/ws rw - ext4 /dev/vda rw\n"}})
		dir, err := os.Open(filepath.Join(proc, "7"))
		must(t, err)
		defer dir.Close()
		if err := verifyThrough(dir, want[:1]); err == nil {
			t.Fatal("a symlink to the workspace passed for the workspace")
		}
	})
}

func dropLines(s, prefix string) []string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
