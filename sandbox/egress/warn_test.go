package egress

import (
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		want  int
	}{
		{[]string{"*.githubusercontent.com"}, 1}, // every subdomain is its own site on the PSL
		{[]string{"*.github.io"}, 1},
		{[]string{"*.s3.amazonaws.com"}, 1},
		{[]string{"*"}, 1},
		{[]string{"*.example.org", "example.org", "sub.github.io", "@go"}, 0},
		{[]string{"*.co.uk:443"}, 1},
	} {
		got := Warnings(tc.allow)
		if len(got) != tc.want {
			t.Errorf("Warnings(%q) = %q; want %d", tc.allow, got, tc.want)
		}
		for _, w := range got {
			if !strings.Contains(w, "network.allow") {
				t.Errorf("warning %q does not name the setting", w)
			}
		}
	}
}
