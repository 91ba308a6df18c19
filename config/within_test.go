package config

import "testing"

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		p, dir string
		want   bool
	}{
		{"/a", "/a", true},
		{"/a/b", "/a", true},
		{"/a/b/", "/a", true},
		{"/ab", "/a", false},
		{"/a/..b", "/a", true},
		{"/", "/a", false},
		{"/x", "/", true},
		{"/", "/", true},
		{"/a/../etc", "/a", false},
		{"/a/./b", "/a/", true},
		{"/a", "/a/b", false},
		{"a", "/a", false},
		{"/a", "a", false},
		{"a/b", "a", true},
		{"a", ".", true},
		{"../a", ".", false},
		{"..", ".", false},
	} {
		if got := Within(tt.p, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.dir, got, tt.want)
		}
	}
}
