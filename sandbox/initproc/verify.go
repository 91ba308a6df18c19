package initproc

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/mountinfo"
)

// ExpectedMount is one bind mount the executor asked the engine for, as
// init must find it: the mount point, and the device, inode and type of
// the object the executor opened (and pinned) as its source.
type ExpectedMount struct {
	Target string `json:"t"`
	Dev    uint64 `json:"d"`
	Ino    uint64 `json:"i"`
	Dir    bool   `json:"dir,omitempty"`
	RO     bool   `json:"ro,omitempty"`
	// HostID: the runtime virtualizes device and inode numbers (gVisor
	// serves every bind mount through its gofer as a fresh 9p file system
	// whose root is inode 1), so init cannot compare Dev and Ino; the
	// executor compares them on the host side instead, through the
	// gofer's own view of the mount (sandbox/docker, gofer.go), before it
	// hands the container a request. Init still checks everything else.
	HostID bool `json:"h,omitempty"`
}

// ErrMounts: what got mounted is not what the executor expected.
var ErrMounts = errors.New("unexpected mount table")

// EncodeExpect encodes the expected table for init's --expect argument.
func EncodeExpect(ms []ExpectedMount) string {
	b, _ := json.Marshal(ms)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeExpect is EncodeExpect's inverse.
func DecodeExpect(s string) ([]ExpectedMount, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("expected mounts: %w", err)
	}
	var ms []ExpectedMount
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, fmt.Errorf("expected mounts: %w", err)
	}
	return ms, nil
}

// MountEntry is one line of /proc/self/mountinfo.
type MountEntry = mountinfo.Entry

// ParseMountinfo parses /proc/PID/mountinfo; a malformed table is
// ErrMounts.
func ParseMountinfo(r io.Reader) ([]MountEntry, error) {
	table, err := mountinfo.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMounts, err)
	}
	return table, nil
}

// runtimeMount reports whether a mount the executor did not ask for is
// one the container runtime always makes: the root, /proc, /dev and /sys
// with their sub-mounts (masked and read-only paths), the engine's
// /etc/hostname, /etc/hosts and /etc/resolv.conf (and Podman's
// /etc/passwd and /etc/group), and the tmpfs at /tmp (and Podman's at /run
// and /var/tmp).
func runtimeMount(m MountEntry) bool {
	t := m.Target
	switch t {
	case "/", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf":
		return true
	case "/etc/passwd", "/etc/group":
		// Podman writes its own copies, with the container's user added,
		// when the image does not know that user (its Docker API cannot
		// turn that off). Files of the engine's, like /etc/hosts.
		return true
	case "/tmp", "/run", "/var/tmp":
		// Podman adds fresh tmpfs at /run and /var/tmp when the root is
		// read-only (its read-only-tmpfs default, which its Docker API
		// does not let a client turn off). They are the engine's own
		// empty file systems, never a bind source an agent could swap.
		return m.FSType == "tmpfs"
	}
	for _, p := range []string{"/proc", "/dev", "/sys"} {
		if t == p || strings.HasPrefix(t, p+"/") {
			return true
		}
	}
	return false
}

// VerifyMounts compares the mount table (mountinfo, parsed) and the
// objects at the mount points with want. It fails on any mount that is
// neither expected nor made by the runtime, an expected mount missing or
// mounted twice, a device/inode (unless HostID)/type other than expected, a read-only
// mount that is writable, and any socket at any mount point. lstat is
// injected for tests (unix.Lstat in init).
func VerifyMounts(table []MountEntry, want []ExpectedMount, lstat func(string, *unix.Stat_t) error) error {
	exp := make(map[string]ExpectedMount, len(want))
	for _, w := range want {
		exp[w.Target] = w
	}
	count := map[string]int{}
	for _, m := range table {
		var st unix.Stat_t
		if err := lstat(m.Target, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			return fmt.Errorf("%w: a socket is mounted at %s", ErrMounts, m.Target)
		}
		w, ok := exp[m.Target]
		if !ok {
			if runtimeMount(m) {
				continue
			}
			return fmt.Errorf("%w: %s (%s from %s) was not asked for", ErrMounts, m.Target, m.FSType, m.Source)
		}
		count[m.Target]++
		if w.RO && !hasOption(m.Options, "ro") {
			return fmt.Errorf("%w: %s should be read-only but is mounted %s", ErrMounts, m.Target, strings.Join(m.Options, ","))
		}
	}
	for _, w := range want {
		switch count[w.Target] {
		case 0:
			return fmt.Errorf("%w: %s is not mounted", ErrMounts, w.Target)
		case 1:
		default:
			return fmt.Errorf("%w: %s is mounted %d times", ErrMounts, w.Target, count[w.Target])
		}
		var st unix.Stat_t
		if err := lstat(w.Target, &st); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMounts, w.Target, err)
		}
		typ := st.Mode & unix.S_IFMT
		if (w.Dir && typ != unix.S_IFDIR) || (!w.Dir && typ != unix.S_IFREG) {
			return fmt.Errorf("%w: %s is not the %s that was checked (mode %o)", ErrMounts, w.Target, kind(w.Dir), st.Mode)
		}
		if !w.HostID && (uint64(st.Dev) != w.Dev || st.Ino != w.Ino) {
			return fmt.Errorf("%w: %s is device %d inode %d, not the checked device %d inode %d", ErrMounts, w.Target, st.Dev, st.Ino, w.Dev, w.Ino)
		}
	}
	return nil
}

func kind(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}

func hasOption(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// verifySelf checks this process's own mount table against want.
func verifySelf(want []ExpectedMount) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMounts, err)
	}
	defer f.Close()
	table, err := ParseMountinfo(f)
	if err != nil {
		return err
	}
	return VerifyMounts(table, want, unix.Lstat)
}
