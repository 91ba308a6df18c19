package sandbox

import (
	"slices"
	"testing"
)

func TestEnv(t *testing.T) {
	host := map[string]string{"GOPROXY": "off", "SECRET_TOKEN": "x", "PATH": "/evil", "HOME": "/root", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	env := Env("", []string{"GOPROXY", "PATH", "HOME", "EMPTY", "UNSET"}, getenv, []string{"TERM=xterm", "X=1=2"})
	want := map[string]string{
		"PATH": Path, "HOME": Home, "TERM": "xterm", "PAGER": "cat", "GIT_PAGER": "cat",
		"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "DEBIAN_FRONTEND": "noninteractive",
		"GOPROXY": "off", "EMPTY": "", "X": "1=2",
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := cutEq(kv)
		if _, dup := got[k]; dup {
			t.Errorf("duplicate %s", k)
		}
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"SECRET_TOKEN", "UNSET"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s must not pass", k)
		}
	}
	if !slices.IsSorted(env) {
		t.Error("env not sorted")
	}
	if p := Env("/custom", nil, nil, nil); !slices.Contains(p, "PATH=/custom") {
		t.Errorf("path override lost: %v", p)
	}
}

func cutEq(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
