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
		name    string
		spec    Spec
		wantErr bool
		check   func(Spec) bool
	}{
		{"defaults", Spec{Argv: []string{"true"}}, false, func(s Spec) bool { return s.Workdir == ws && s.Timeout == config.DefaultTimeout }},
		{"capped timeout", Spec{Shell: "x", Timeout: time.Hour}, false, func(s Spec) bool { return s.Timeout == config.MaxTimeout }},
		{"subdir cleaned", Spec{Shell: "x", Workdir: ws + "/a/../b/"}, false, func(s Spec) bool { return s.Workdir == ws+"/b" }},
		{"none", Spec{}, true, nil},
		{"both", Spec{Argv: []string{"a"}, Shell: "b"}, true, nil},
		{"empty argv0", Spec{Argv: []string{""}}, true, nil},
		{"relative workdir", Spec{Shell: "x", Workdir: "a"}, true, nil},
		{"escaping workdir", Spec{Shell: "x", Workdir: ws + "/../other"}, true, nil},
		{"prefix sibling", Spec{Shell: "x", Workdir: ws + "2"}, true, nil},
		{"bad env", Spec{Shell: "x", Env: []string{"=v"}}, true, nil},
		{"nul", Spec{Argv: []string{"a\x00"}}, true, nil},
		{"negative timeout", Spec{Shell: "x", Timeout: -1}, true, nil},
		{"large stdin streams", Spec{Shell: "x", Stdin: make([]byte, 40<<20)}, false, func(s Spec) bool { return len(s.Stdin) == 40<<20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.spec, ws)
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

func TestClampTimeout(t *testing.T) {
	const def, max = 30 * time.Second, 5 * time.Minute
	tests := []struct {
		name                string
		requested, def, max time.Duration
		want                time.Duration
	}{
		{"requested", 10 * time.Second, def, max, 10 * time.Second},
		{"zero takes the default", 0, def, max, def},
		{"capped", time.Hour, def, max, max},
		{"default capped", 0, time.Hour, max, max},
		{"negative left for Normalize", -time.Second, def, max, -time.Second},
		{"no default: config's", 0, 0, max, min(config.DefaultTimeout, max)},
		{"no cap: config's", time.Hour, def, 0, config.MaxTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClampTimeout(tt.requested, tt.def, tt.max); got != tt.want {
				t.Errorf("ClampTimeout(%v, %v, %v) = %v, want %v", tt.requested, tt.def, tt.max, got, tt.want)
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
