package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// rules describes, per syscall name, every rule naming it, comparably.
func rules(p *seccomp.Seccomp) map[string][]string {
	out := map[string][]string{}
	for _, s := range p.Syscalls {
		names := s.Names
		errno := "-"
		if s.ErrnoRet != nil {
			errno = fmt.Sprint(*s.ErrnoRet)
		}
		inc, _ := json.Marshal(s.Includes)
		exc, _ := json.Marshal(s.Excludes)
		desc := fmt.Sprintf("%s errno=%s args=%+v inc=%s exc=%s", s.Action, errno, s.Args, inc, exc)
		for _, n := range names {
			out[n] = append(out[n], desc)
		}
	}
	for n := range out {
		slices.Sort(out[n])
	}
	return out
}

func TestSeccompConditionalModeRules(t *testing.T) {
	p := seccompProfile()
	want := map[string]uint{
		"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "creat": 1, "open": 2,
		"openat": 3, "mknod": 1, "mknodat": 2, "mkdir": 1, "mkdirat": 2,
	}
	got := rules(p)
	for name, idx := range want {
		exp := []string{fmt.Sprintf("%s errno=- args=%+v inc=null exc=null", specs.ActAllow, []specs.LinuxSeccompArg{{Index: idx, Value: 0o6000, ValueTwo: 0, Op: specs.OpMaskedEqual}})}
		if name == "mknod" || name == "mknodat" {
			// No setid bits, and only a regular file, a FIFO or a socket.
			exp = nil
			for _, typ := range []uint64{0, 0o100000, 0o010000, 0o140000} {
				exp = append(exp, fmt.Sprintf("%s errno=- args=%+v inc=null exc=null", specs.ActAllow, []specs.LinuxSeccompArg{{Index: idx, Value: 0o176000, ValueTwo: typ, Op: specs.OpMaskedEqual}}))
			}
			slices.Sort(exp)
		}
		if !slices.Equal(got[name], exp) {
			t.Errorf("%s: rules %q, want only %q", name, got[name], exp)
		}
	}
}

func TestSeccompDenied(t *testing.T) {
	got := rules(seccompProfile())
	for name, errno := range map[string]unix.Errno{
		"openat2": unix.ENOSYS, "io_uring_setup": unix.EPERM, "io_uring_enter": unix.EPERM, "io_uring_register": unix.EPERM,
	} {
		exp := fmt.Sprintf("%s errno=%d args=[] inc=null exc=null", specs.ActErrno, uint(errno))
		if !slices.Equal(got[name], []string{exp}) {
			t.Errorf("%s: rules %q, want only %q", name, got[name], exp)
		}
	}
}

// TestSeccompRestUnchanged: every other rule of Docker's default profile
// is there unchanged, and nothing else was added.
func TestSeccompRestUnchanged(t *testing.T) {
	def, mine := seccomp.DefaultProfile(), seccompProfile()
	touched := map[string]bool{"openat2": true, "io_uring_setup": true, "io_uring_enter": true, "io_uring_register": true}
	for n := range modeArgs {
		touched[n] = true
	}
	a, b := rules(def), rules(mine)
	for n := range touched {
		delete(a, n)
		delete(b, n)
	}
	if !reflect.DeepEqual(a, b) {
		for n := range a {
			if !slices.Equal(a[n], b[n]) {
				t.Errorf("%s: default %q, ours %q", n, a[n], b[n])
			}
		}
		for n := range b {
			if _, ok := a[n]; !ok {
				t.Errorf("%s: added %q", n, b[n])
			}
		}
	}
	if mine.DefaultAction != def.DefaultAction || *mine.DefaultErrnoRet != *def.DefaultErrnoRet || *mine.DefaultErrnoRet != uint(unix.EPERM) ||
		!reflect.DeepEqual(mine.ArchMap, def.ArchMap) || !reflect.DeepEqual(mine.Architectures, def.Architectures) {
		t.Errorf("top-level settings changed: %+v", mine.LinuxSeccomp)
	}
}

// TestSeccompOption: the option is inline JSON that decodes back to the
// same profile and resolves for amd64 and arm64 hosts.
func TestSeccompOption(t *testing.T) {
	opt := seccompOpt()
	body, ok := strings.CutPrefix(opt, "seccomp=")
	if !ok {
		t.Fatalf("option %.40q", opt)
	}
	if seccompOpt() != opt {
		t.Error("option not stable")
	}
	var back seccomp.Seccomp
	if err := json.Unmarshal([]byte(body), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rules(&back), rules(seccompProfile())) {
		t.Error("JSON round trip changed the rules")
	}
	// rules() and seccompProfile() read only Names: a rule using the
	// legacy single "name" key would escape both, so there must be none.
	var raw struct {
		Syscalls []map[string]json.RawMessage `json:"syscalls"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Syscalls) == 0 {
		t.Error("JSON has no syscall rules")
	}
	for i, r := range raw.Syscalls {
		if n, ok := r["name"]; ok {
			t.Errorf("rule %d uses the legacy name field: %s", i, n)
		}
	}
	// Docker 20.10 knows these fields; a silently ignored one would drop
	// a condition and widen the profile.
	for _, key := range []string{`"defaultErrnoRet":1`, `"op":"SCMP_CMP_MASKED_EQ"`, `"value":3072`, `"errnoRet":38`} {
		if !strings.Contains(body, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestContainerSpecSeccomp(t *testing.T) {
	_, host := testRunner(t, t.TempDir()).containerSpec(nil, nil)
	if !slices.Contains(host.SecurityOpt, seccompOpt()) || !slices.Contains(host.SecurityOpt, "no-new-privileges") {
		t.Errorf("security options %.200q", host.SecurityOpt)
	}
}

func TestSeccompForEngine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	docker := types.Version{Version: "20.10.24", Components: []types.ComponentVersion{{Name: "Engine"}}}
	if opt, err := seccompFor(docker, dir, false); err != nil || opt != seccompOpt() {
		t.Errorf("docker: option %.60q, %v; want the inline profile", opt, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("docker: state dir touched (%v)", err)
	}
	podman := types.Version{Version: "5.4.0", Components: []types.ComponentVersion{{Name: "Podman Engine"}}}
	opt, err := seccompFor(podman, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	path, ok := strings.CutPrefix(opt, "seccomp=")
	if !ok || path != filepath.Join(dir, "seccomp.json") {
		t.Fatalf("podman: option %q, want a file in %s", opt, dir)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != strings.TrimPrefix(seccompOpt(), "seccomp=") {
		t.Errorf("podman: profile file differs from the inline profile (%v)", err)
	}
	// Written again (a second runner) it stays whole.
	if opt2, err := seccompFor(podman, dir, false); err != nil || opt2 != opt {
		t.Errorf("podman again: %q, %v", opt2, err)
	}
}

// TestGVisorProfile: the gVisor profile is the profile with Docker's
// clone3 ENOSYS rule turned into an allow (gVisor would answer it EPERM
// and glibc could not start threads), and nothing else changed.
func TestGVisorProfile(t *testing.T) {
	full, gv := seccompProfile(), gvisorProfile(seccompProfile())
	if len(gv.Syscalls) != len(full.Syscalls) {
		t.Fatalf("gVisor profile has %d rules, want %d", len(gv.Syscalls), len(full.Syscalls))
	}
	changed := 0
	for i, s := range gv.Syscalls {
		if reflect.DeepEqual(s, full.Syscalls[i]) {
			continue
		}
		changed++
		if !slices.Equal(s.Names, []string{"clone3"}) || s.Action != specs.ActAllow || full.Syscalls[i].Action != specs.ActErrno {
			t.Errorf("rule %d changed: %+v -> %+v", i, full.Syscalls[i].LinuxSyscall, s.LinuxSyscall)
		}
	}
	if changed != 1 {
		t.Fatalf("%d rules changed, want exactly the clone3 one", changed)
	}
	if seccompOptGVisor() == seccompOpt() {
		t.Fatal("the gVisor option is the default one")
	}
	opt, err := seccompFor(types.Version{}, t.TempDir(), true)
	if err != nil || opt != seccompOptGVisor() {
		t.Fatalf("seccompFor(docker, gvisor) = %.40q, %v", opt, err)
	}
}
