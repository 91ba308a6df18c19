package config

import "testing"

func TestMCPApprovalTTYValidate(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"", true},
		{"/dev/pts/3", true},
		{"dev/pts/3", false},
		{"/dev/pts/../pts/3", false},
	}
	for _, tt := range tests {
		c := defaultMCP()
		c.ApprovalTTY = tt.path
		if err := c.validate(); (err == nil) != tt.ok {
			t.Errorf("approval_tty %q: %v, want ok=%v", tt.path, err, tt.ok)
		}
	}
}
