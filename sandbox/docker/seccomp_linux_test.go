package docker

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestSeccompResolves loads the option's JSON the way the engine does for
// this host (arch, no capabilities) and checks the result.
func TestSeccompResolves(t *testing.T) {
	body := strings.TrimPrefix(seccompOpt(), "seccomp=")
	got, err := seccomp.LoadProfile(body, &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Architectures) == 0 {
		t.Error("no architectures")
	}
	var modeRules int
	for _, s := range got.Syscalls {
		for _, n := range s.Names {
			_, guarded := modeArgs[n]
			switch {
			case guarded && s.Action == specs.ActAllow:
				mask := uint64(0o6000)
				if slices.Contains(nodeCalls, n) {
					mask |= 0o170000 // and the file type: no device nodes
				}
				if len(s.Args) != 1 || s.Args[0].Index != modeArgs[n] || s.Args[0].Value != mask || s.Args[0].Op != specs.OpMaskedEqual ||
					s.Args[0].ValueTwo&^0o170000 != 0 || s.Args[0].ValueTwo == unix.S_IFCHR || s.Args[0].ValueTwo == unix.S_IFBLK {
					t.Errorf("%s allowed by %+v", n, s)
				}
				modeRules++
			case (n == "openat2" || strings.HasPrefix(n, "io_uring")) && s.Action != specs.ActErrno:
				t.Errorf("%s: %s", n, s.Action)
			}
		}
	}
	if want := len(modeArgs) + len(nodeCalls)*(len(nodeTypes)-1); modeRules != want {
		t.Errorf("%d conditional rules, want %d", modeRules, want)
	}
	if !slices.Contains(got.Architectures, specs.ArchX86_64) && !slices.Contains(got.Architectures, specs.ArchAARCH64) {
		t.Errorf("architectures %v", got.Architectures)
	}
}
