package sandbox

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/config"
)

func TestNormalize(t *testing.T) {
	const ws = "/work/ws"
	tests := []struct {
		name     string
		spec     Spec
		def, max time.Duration // the backend's timeouts; 0 for config's
		wantErr  bool
		check    func(Spec) bool
	}{
		{"defaults", Spec{Argv: []string{"true"}}, 0, 0, false, func(s Spec) bool { return s.Workdir == ws && s.Timeout == config.DefaultTimeout }},
		{"capped timeout", Spec{Shell: "x", Timeout: time.Hour}, 0, 0, false, func(s Spec) bool { return s.Timeout == config.MaxTimeout }},
		{"backend default", Spec{Shell: "x"}, 30 * time.Second, time.Minute, false, func(s Spec) bool { return s.Timeout == 30*time.Second }},
		{"backend cap", Spec{Shell: "x", Timeout: time.Hour}, 30 * time.Second, time.Minute, false, func(s Spec) bool { return s.Timeout == time.Minute }},
		{"requested within the cap", Spec{Shell: "x", Timeout: 45 * time.Second}, 30 * time.Second, time.Minute, false, func(s Spec) bool { return s.Timeout == 45*time.Second }},
		{"subdir cleaned", Spec{Shell: "x", Workdir: ws + "/a/../b/"}, 0, 0, false, func(s Spec) bool { return s.Workdir == ws+"/b" }},
		{"none", Spec{}, 0, 0, true, nil},
		{"both", Spec{Argv: []string{"a"}, Shell: "b"}, 0, 0, true, nil},
		{"empty argv0", Spec{Argv: []string{""}}, 0, 0, true, nil},
		{"relative workdir", Spec{Shell: "x", Workdir: "a"}, 0, 0, true, nil},
		{"escaping workdir", Spec{Shell: "x", Workdir: ws + "/../other"}, 0, 0, true, nil},
		{"prefix sibling", Spec{Shell: "x", Workdir: ws + "2"}, 0, 0, true, nil},
		{"bad env", Spec{Shell: "x", Env: []string{"=v"}}, 0, 0, true, nil},
		{"nul", Spec{Argv: []string{"a\x00"}}, 0, 0, true, nil},
		{"negative timeout", Spec{Shell: "x", Timeout: -1}, 0, 0, true, nil},
		{"large stdin streams", Spec{Shell: "x", Stdin: make([]byte, 40<<20)}, 0, 0, false, func(s Spec) bool { return len(s.Stdin) == 40<<20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.spec, ws, tt.def, tt.max)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("err = %v, want ErrInvalidSpec", err)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestCheckOwnerMissingWorkspace(t *testing.T) {
	err := CheckOwner(filepath.Join(t.TempDir(), "gone"), false)
	if !errors.Is(err, ErrUnsafeWorkspace) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrUnsafeWorkspace wrapping fs.ErrNotExist", err)
	}
}
