package initproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const sampleMountinfo = `600 500 0:50 / / ro,relatime master:1 - overlay overlay rw,lowerdir=x
601 600 0:52 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
602 600 0:53 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
603 602 0:54 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw
604 600 0:55 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
605 600 0:56 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=524288k
606 600 8:1 /work/ws /work/my\040ws rw,relatime - ext4 /dev/vda rw
607 606 8:1 /work/ws/.git /work/my\040ws/.git rw,relatime - ext4 /dev/vda rw
608 607 8:1 /work/ws/.git/config /work/my\040ws/.git/config ro,relatime - ext4 /dev/vda rw
609 600 8:1 /usr/bin/agentbox /.agentbox/init ro,relatime - ext4 /dev/vda rw
610 600 8:1 /var/lib/docker/containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw
611 601 0:6 /null /proc/kcore rw,nosuid - devtmpfs udev rw
`

func TestVerifyMounts(t *testing.T) {
	want := []ExpectedMount{
		{Target: "/work/my ws", Dev: 1, Ino: 10, Dir: true},
		{Target: "/work/my ws/.git", Dev: 1, Ino: 11, Dir: true},
		{Target: "/work/my ws/.git/config", Dev: 1, Ino: 12, RO: true},
		{Target: "/.agentbox/init", Dev: 1, Ino: 13, RO: true},
	}
	objects := map[string]unix.Stat_t{
		"/work/my ws":             {Dev: 1, Ino: 10, Mode: unix.S_IFDIR},
		"/work/my ws/.git":        {Dev: 1, Ino: 11, Mode: unix.S_IFDIR},
		"/work/my ws/.git/config": {Dev: 1, Ino: 12, Mode: unix.S_IFREG},
		"/.agentbox/init":         {Dev: 1, Ino: 13, Mode: unix.S_IFREG},
	}
	lstatWith := func(over map[string]unix.Stat_t) func(string, *unix.Stat_t) error {
		return func(p string, st *unix.Stat_t) error {
			if o, ok := over[p]; ok {
				*st = o
				return nil
			}
			if o, ok := objects[p]; ok {
				*st = o
				return nil
			}
			*st = unix.Stat_t{Mode: unix.S_IFDIR}
			return nil
		}
	}
	tests := []struct {
		name  string
		info  string
		over  map[string]unix.Stat_t
		want  []ExpectedMount
		error string
	}{
		{name: "as expected", info: sampleMountinfo},
		{name: "config swapped for a host file", info: sampleMountinfo,
			over: map[string]unix.Stat_t{"/work/my ws/.git/config": {Dev: 1, Ino: 99, Mode: unix.S_IFREG}}, error: "inode 99"},
		{name: "config swapped for a socket", info: sampleMountinfo,
			over: map[string]unix.Stat_t{"/work/my ws/.git/config": {Dev: 1, Ino: 12, Mode: unix.S_IFSOCK}}, error: "socket"},
		{name: "directory where a file was checked", info: sampleMountinfo,
			over: map[string]unix.Stat_t{"/.agentbox/init": {Dev: 1, Ino: 13, Mode: unix.S_IFDIR}}, error: "not the file"},
		{name: "another device", info: sampleMountinfo,
			over: map[string]unix.Stat_t{"/work/my ws": {Dev: 2, Ino: 10, Mode: unix.S_IFDIR}}, error: "device 2"},
		{name: "unexpected bind", info: sampleMountinfo + "612 600 0:30 /run/docker.sock /work/my\\040ws/x rw - tmpfs tmpfs rw\n", error: "was not asked for"},
		{name: "socket at a runtime mount", info: sampleMountinfo,
			over: map[string]unix.Stat_t{"/etc/hosts": {Mode: unix.S_IFSOCK}}, error: "socket"},
		{name: "read-only mount made writable", info: strings.Replace(sampleMountinfo, "/.agentbox/init ro,", "/.agentbox/init rw,", 1), error: "read-only"},
		{name: "expected mount missing", info: strings.Replace(sampleMountinfo, "608 607", "#", 1)[:0] + strings.Join(dropLine(sampleMountinfo, "608 "), ""), error: "not mounted"},
		{name: "mounted twice", info: sampleMountinfo + "613 608 8:1 /etc /work/my\\040ws/.git/config ro - ext4 /dev/vda rw\n", error: "2 times"},
		{name: "Podman's passwd, group and tmpfs", info: sampleMountinfo + "620 600 8:1 /var/lib/containers/x/passwd /etc/passwd rw - ext4 /dev/vda rw\n621 600 8:1 /var/lib/containers/x/group /etc/group rw - ext4 /dev/vda rw\n622 600 0:60 / /run rw,nosuid,nodev - tmpfs tmpfs rw\n623 600 0:61 / /var/tmp rw,nosuid,nodev - tmpfs tmpfs rw\n"},
		{name: "a socket as Podman's passwd", info: sampleMountinfo + "620 600 8:1 /run/docker.sock /etc/passwd rw - ext4 /dev/vda rw\n",
			over: map[string]unix.Stat_t{"/etc/passwd": {Mode: unix.S_IFSOCK}}, error: "socket"},
		{name: "a bind at /run", info: sampleMountinfo + "622 600 8:1 /run /run rw - ext4 /dev/vda rw\n", error: "not asked for"},
		{name: "tmpfs /tmp of another type", info: strings.Replace(sampleMountinfo, "- tmpfs tmpfs rw,size=524288k", "- ext4 /dev/vda rw", 1), error: "not asked for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := ParseMountinfo(strings.NewReader(tt.info))
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if tt.want != nil {
				w = tt.want
			}
			err = VerifyMounts(table, w, lstatWith(tt.over))
			switch {
			case tt.error == "" && err != nil:
				t.Fatalf("unexpected refusal: %v", err)
			case tt.error != "" && (err == nil || !strings.Contains(err.Error(), tt.error) || !errors.Is(err, ErrMounts)):
				t.Fatalf("got %v, want an error containing %q", err, tt.error)
			}
		})
	}
	// A mount point that cannot be examined is refused with the reason.
	table, err := ParseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	denied := func(p string, st *unix.Stat_t) error {
		if p == "/.agentbox/init" {
			return unix.EACCES
		}
		return lstatWith(nil)(p, st)
	}
	if err := VerifyMounts(table, want, denied); !errors.Is(err, ErrMounts) || !errors.Is(err, unix.EACCES) {
		t.Errorf("unreadable mount point: %v, want ErrMounts wrapping EACCES", err)
	}
}

func dropLine(s, prefix string) []string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func TestExpectRoundTrip(t *testing.T) {
	in := []ExpectedMount{{Target: "/w s", Dev: 3, Ino: 4, Dir: true, RO: true}}
	out, err := DecodeExpect(EncodeExpect(in))
	if err != nil || len(out) != 1 || out[0] != in[0] {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := DecodeExpect("!!"); err == nil {
		t.Fatal("bad encoding accepted")
	}
}

// TestMainRefusesUnexpectedMounts: with an expectation this process's
// real mount table cannot meet, init sends Fatal and never takes a
// request.
func TestMainRefusesUnexpectedMounts(t *testing.T) {
	var req, out, diag bytes.Buffer
	WriteFrame(&req, Request, []byte(`{"argv":["true"]}`))
	code := Main(&req, &out, &diag, []ExpectedMount{{Target: "/nonexistent-agentbox-mount", Dev: 1, Ino: 1}})
	if code == 0 {
		t.Fatal("init accepted a mount table it did not expect")
	}
	typ, p, err := ReadFrame(&out)
	if err != nil || typ != Fatal || !strings.Contains(string(p), "mount verification") {
		t.Fatalf("first frame %q %q %v", typ, p, err)
	}
}

// TestMainKillsWhenStreamEnds: the executor's stream ending (it died)
// kills the command at once.
func TestMainKillsWhenStreamEnds(t *testing.T) {
	var req bytes.Buffer
	body, _ := json.Marshal(Req{Shell: "sleep 30", Workdir: "/tmp", Env: []string{"PATH=/usr/bin:/bin"}, Key: testKey})
	WriteFrame(&req, Request, body)
	open, hold := io.Pipe()
	in := io.MultiReader(&req, open)
	var out, diag bytes.Buffer
	done := make(chan int)
	go func() { done <- Main(in, &out, &diag, nil) }()
	time.Sleep(200 * time.Millisecond)
	hold.Close()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the command outlived its executor's stream by 3 s")
	}
	if !strings.Contains(out.String(), "SIGKILL") {
		t.Errorf("exit frame does not report the kill: %q", out.String())
	}
}

// gvisorMountinfo is /proc/self/mountinfo inside a runsc (gVisor 2022)
// container: every bind mount is a 9p attach of the gofer, numbered
// afresh (root inode 1 on its own device).
const gvisorMountinfo = `8 8 0:8 / / ro  - 9p none ro,trans=fd,rfdno=4,wfdno=4,aname=/,cache=fscache
9 8 0:6 / /dev rw  - tmpfs none rw,mode=0755
10 8 0:9 / /sys ro,noexec  - sysfs none ro,dentry_cache_limit=1000
11 8 0:10 / /proc rw,noexec  - proc none rw,dentry_cache_limit=1000
12 9 0:11 / /dev/pts rw,noexec  - devpts none rw
13 8 0:19 / /tmp rw,nosuid,nodev  - tmpfs none rw,mode=1777,size=536870912
14 8 0:13 / /work/ws rw  - 9p none rw,trans=fd,rfdno=6,wfdno=6,aname=/,cache=remote_revalidating
15 8 0:14 / /etc/hosts rw  - 9p none rw,trans=fd,rfdno=9,wfdno=9,aname=/,cache=remote_revalidating
17 14 0:16 / /work/ws/.git ro  - 9p none ro,trans=fd,rfdno=10,wfdno=10,aname=/,cache=remote_revalidating
18 8 0:17 / /.agentbox/init ro  - 9p none ro,trans=fd,rfdno=5,wfdno=5,aname=/,cache=remote_revalidating
`

func TestVerifyMountsVirtualizedIdentity(t *testing.T) {
	// What gVisor reports at the mount points: its own device per mount,
	// inode 1 at every mount root.
	inside := map[string]unix.Stat_t{
		"/work/ws":        {Dev: 13, Ino: 1, Mode: unix.S_IFDIR},
		"/work/ws/.git":   {Dev: 16, Ino: 1, Mode: unix.S_IFDIR},
		"/.agentbox/init": {Dev: 17, Ino: 1, Mode: unix.S_IFREG},
	}
	want := func(hostID bool) []ExpectedMount {
		return []ExpectedMount{
			{Target: "/work/ws", Dev: 65024, Ino: 9978002, Dir: true, HostID: hostID},
			{Target: "/work/ws/.git", Dev: 65024, Ino: 9977896, Dir: true, RO: true, HostID: hostID},
			{Target: "/.agentbox/init", Dev: 65024, Ino: 77, RO: true, HostID: hostID},
		}
	}
	tests := []struct {
		name   string
		info   string
		hostID bool
		over   map[string]unix.Stat_t
		error  string
	}{
		// Without HostID the virtual numbers never match: refused, never
		// skipped.
		{name: "identity compared in the container", info: gvisorMountinfo, error: "inode 1"},
		{name: "identity left to the host", info: gvisorMountinfo, hostID: true},
		{name: "read-only mount made writable", info: strings.Replace(gvisorMountinfo, "/work/ws/.git ro ", "/work/ws/.git rw ", 1), hostID: true, error: "read-only"},
		{name: "unexpected 9p mount", info: gvisorMountinfo + "19 14 0:20 / /work/ws/sock rw  - 9p none rw,trans=fd\n", hostID: true, error: "not asked for"},
		{name: "file where a directory was checked", info: gvisorMountinfo, hostID: true,
			over: map[string]unix.Stat_t{"/work/ws/.git": {Dev: 16, Ino: 1, Mode: unix.S_IFREG}}, error: "not the directory"},
		{name: "socket at a mount point", info: gvisorMountinfo, hostID: true,
			over: map[string]unix.Stat_t{"/.agentbox/init": {Dev: 17, Ino: 1, Mode: unix.S_IFSOCK}}, error: "socket"},
		{name: "expected mount missing", info: strings.Join(dropLine(gvisorMountinfo, "17 "), ""), hostID: true, error: "not mounted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := ParseMountinfo(strings.NewReader(tt.info))
			if err != nil {
				t.Fatal(err)
			}
			err = VerifyMounts(table, want(tt.hostID), func(p string, st *unix.Stat_t) error {
				if o, ok := tt.over[p]; ok {
					*st = o
				} else if o, ok := inside[p]; ok {
					*st = o
				} else {
					*st = unix.Stat_t{Mode: unix.S_IFDIR}
				}
				return nil
			})
			switch {
			case tt.error == "" && err != nil:
				t.Fatalf("unexpected refusal: %v", err)
			case tt.error != "" && (err == nil || !strings.Contains(err.Error(), tt.error) || !errors.Is(err, ErrMounts)):
				t.Fatalf("got %v, want an error containing %q", err, tt.error)
			}
		})
	}
}
