package config

import (
	"errors"
	"strings"
	"testing"
)

// sandbox.git_safe_config is on by default, a user config may turn it
// off, and a project config may not touch it at all.
func TestGitSafeConfigLayers(t *testing.T) {
	tests := []struct {
		name, user, project string
		want                bool
		err                 string
	}{
		{name: "default", want: true},
		{name: "user off", user: "sandbox:\n  git_safe_config: false\n", want: false},
		{name: "project off", project: "sandbox:\n  git_safe_config: false\n", err: "sandbox.git_safe_config cannot be set by a project config"},
		{name: "project on", project: "sandbox:\n  git_safe_config: true\n", err: "sandbox.git_safe_config cannot be set by a project config"},
		{name: "user off, project on", user: "sandbox:\n  git_safe_config: false\n", project: "sandbox:\n  git_safe_config: true\n", err: "cannot be set by a project config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadWithProject(t, tt.user, tt.project)
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Sandbox.GitSafeConfig != tt.want {
				t.Errorf("git_safe_config = %v, want %v", c.Sandbox.GitSafeConfig, tt.want)
			}
		})
	}
	if _, ok := projectKeys["sandbox.git_safe_config"]; ok {
		t.Error("sandbox.git_safe_config must not be a project key")
	}
}
