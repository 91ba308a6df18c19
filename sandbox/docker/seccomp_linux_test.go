package docker

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
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
				if len(s.Args) != 1 || s.Args[0].Index != modeArgs[n] || s.Args[0].Value != 0o6000 || s.Args[0].Op != specs.OpMaskedEqual {
					t.Errorf("%s allowed by %+v", n, s)
				}
				modeRules++
			case (n == "openat2" || strings.HasPrefix(n, "io_uring")) && s.Action != specs.ActErrno:
				t.Errorf("%s: %s", n, s.Action)
			}
		}
	}
	if modeRules != len(modeArgs) {
		t.Errorf("%d conditional rules, want %d", modeRules, len(modeArgs))
	}
	if !slices.Contains(got.Architectures, specs.ArchX86_64) && !slices.Contains(got.Architectures, specs.ArchAARCH64) {
		t.Errorf("architectures %v", got.Architectures)
	}
}
