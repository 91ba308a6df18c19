package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/config/atomicfile"
)

// The seccomp profile every sandbox container gets: Docker's default
// profile, changed so that no system call can put S_ISUID or S_ISGID on a
// file. Without CAP_FSETID the kernel already strips those bits in most
// cases, but a container user that owns the file (uid 0 on a root-owned
// workspace) may still chmod u+s its own files; a setuid-root binary left
// in the workspace would then run with root rights on the host later.
//
// Other routes, for the record: chown(2) and write(2) clear S_ISUID (and
// S_ISGID on group-executable files) for callers without CAP_FSETID, which
// every container lacks; hard links to the host's setuid binaries cross
// mounts (EXDEV); xattrs cannot set mode bits (file capabilities need
// CAP_SETFCAP); io_uring (denied below) would bypass seccomp for opens.

// setidBits are S_ISUID|S_ISGID.
const setidBits = unix.S_ISUID | unix.S_ISGID

// modeArgs maps each call that takes a file mode to the index of that
// argument. These calls are allowed only when (mode & 06000) == 0.
//
// open(2) reads the mode only with O_CREAT or O_TMPFILE; glibc, musl and
// Go pass 0 otherwise, so a plain open never trips the rule. A caller
// issuing raw open/openat with garbage in the mode register and the
// setid bits set in it gets EPERM: a spurious failure, never a bypass.
var modeArgs = map[string]uint{
	"chmod":     1,
	"fchmod":    1,
	"fchmodat":  2,
	"fchmodat2": 2,
	"creat":     1,
	"open":      2,
	"openat":    3,
	"mknod":     1,
	"mknodat":   2,
	"mkdir":     1,
	"mkdirat":   2,
}

// nodeCalls create file system nodes; they are allowed only for the
// nodeTypes, never for a device node. Without CAP_MKNOD (every container
// drops it) the kernel refuses device nodes anyway; gVisor's tmpfs (Debian's
// 2022 runsc) does not check it, so there the profile is what refuses them
// (such a node would reach only gVisor's own devices, never the host's).
var nodeCalls = []string{"mknod", "mknodat"}

// nodeTypes are the file types mknod may create: a regular file (type 0
// or S_IFREG), a FIFO, a socket.
var nodeTypes = []uint64{0, unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK}

// enosysCalls are denied with ENOSYS so that libc falls back: openat2
// carries its mode inside a struct seccomp cannot read, and glibc retries
// with openat on ENOSYS.
var enosysCalls = []string{"openat2"}

// epermCalls are denied outright: io_uring performs opens (with modes)
// in kernel workers that seccomp never sees.
var epermCalls = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// seccompProfile builds the profile (see the file comment).
func seccompProfile() *seccomp.Seccomp {
	p := seccomp.DefaultProfile()
	guarded := func(name string) bool {
		_, ok := modeArgs[name]
		return ok || slices.Contains(enosysCalls, name) || slices.Contains(epermCalls, name)
	}
	kept := p.Syscalls[:0]
	for _, s := range p.Syscalls {
		if s.Action != specs.ActErrno && s.Action != specs.ActKill && s.Action != specs.ActKillProcess && s.Action != specs.ActKillThread {
			// Any rule that could let a guarded call through loses it.
			// Only Names is read: DefaultProfile never uses the legacy
			// single-name field (TestSeccompOption checks the JSON).
			s.Names = slices.DeleteFunc(s.Names, guarded)
			if len(s.Names) == 0 {
				continue
			}
		}
		kept = append(kept, s)
	}
	p.Syscalls = kept

	names := make([]string, 0, len(modeArgs))
	for n := range modeArgs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if slices.Contains(nodeCalls, n) {
			for _, typ := range nodeTypes {
				p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
					LinuxSyscall: specs.LinuxSyscall{
						Names:  []string{n},
						Action: specs.ActAllow,
						Args: []specs.LinuxSeccompArg{{
							Index:    modeArgs[n],
							Value:    setidBits | unix.S_IFMT,
							ValueTwo: typ,
							Op:       specs.OpMaskedEqual,
						}},
					},
					Comment: "agentbox: no setuid/setgid bits, no device nodes",
				})
			}
			continue
		}
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{
				Names:  []string{n},
				Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{
					Index:    modeArgs[n],
					Value:    setidBits,
					ValueTwo: 0,
					Op:       specs.OpMaskedEqual,
				}},
			},
			Comment: "agentbox: no setuid/setgid bits",
		})
	}
	nosys, perm := uint(unix.ENOSYS), uint(unix.EPERM)
	p.Syscalls = append(p.Syscalls,
		&seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: slices.Clone(enosysCalls), Action: specs.ActErrno, ErrnoRet: &nosys},
			Comment:      "agentbox: mode not inspectable; libc falls back to openat",
		},
		&seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: slices.Clone(epermCalls), Action: specs.ActErrno, ErrnoRet: &perm},
			Comment:      "agentbox: io_uring bypasses seccomp",
		},
	)
	return p
}

// seccompOpt is the "seccomp=<json>" security option, computed once (it
// is part of every container create): the Engine API takes the profile
// inline; reading a file is a feature of the CLI. Docker checks it at
// start, not at create. Podman's compatible API reads the value as a file
// path instead: seccompFor hands Podman a file.
var seccompOpt = sync.OnceValue(func() string { return encodeSeccomp(seccompProfile()) })

// seccompOptGVisor is the option for containers under gVisor (see
// gvisorProfile).
var seccompOptGVisor = sync.OnceValue(func() string { return encodeSeccomp(gvisorProfile(seccompProfile())) })

// gvisorProfile adapts p to gVisor's --oci-seccomp, which ignores a rule's
// errnoRet and answers EPERM. Docker's default profile denies clone3 with
// ENOSYS so that glibc falls back to clone (whose flags seccomp can read);
// answered EPERM instead, glibc cannot start a thread at all (Python's
// threading fails). Under gVisor that rule is replaced by one allowing
// clone3: it is served by the Sentry, which is the boundary there (a
// namespace made inside it is the Sentry's, never the host's), and the
// Sentry answers ENOSYS itself where it lacks it. openat2 keeps its rule
// (init and glibc fall back to openat on EPERM there; see initproc).
func gvisorProfile(p *seccomp.Seccomp) *seccomp.Seccomp {
	for _, s := range p.Syscalls {
		if s.Action == specs.ActErrno && slices.Equal(s.Names, []string{"clone3"}) {
			s.Action, s.ErrnoRet, s.Excludes = specs.ActAllow, nil, nil
			s.Comment = "agentbox: under gVisor the Sentry serves clone3 (its --oci-seccomp would turn ENOSYS into EPERM)"
		}
	}
	return p
}

func encodeSeccomp(p *seccomp.Seccomp) string {
	b, err := json.Marshal(p)
	if err != nil {
		// Plain data (strings, numbers, pointers to them): unreachable,
		// and every unit test would show it.
		panic(fmt.Sprintf("encoding the seccomp profile: %v", err))
	}
	return "seccomp=" + string(b)
}

// seccompFor is the security option for the engine that answered v:
// the inline profile for Docker; for Podman, whose compatible API reads
// the value as a file path, the same profile written atomically to
// dir/seccomp.json (dir is the workspace's state dir, outside the
// workspace).
func seccompFor(v types.Version, dir string, gvisor bool) (string, error) {
	if gvisor && !isPodman(v) {
		return seccompOptGVisor(), nil
	}
	if !isPodman(v) {
		return seccompOpt(), nil
	}
	body := strings.TrimPrefix(seccompOpt(), "seccomp=")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("seccomp profile for podman: %w", err)
	}
	path := filepath.Join(dir, "seccomp.json")
	if err := atomicfile.WriteFile(path, []byte(body), 0o644); err != nil {
		return "", fmt.Errorf("seccomp profile for podman: %w", err)
	}
	return "seccomp=" + path, nil
}

// isPodman reports whether the engine is Podman's Docker-compatible API.
func isPodman(v types.Version) bool {
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(v.Platform.Name), "podman")
}
