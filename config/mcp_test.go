package config

import (
	"strings"
	"testing"
)

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

func TestMCPBearerTokenValidate(t *testing.T) {
	tests := []struct {
		tok string
		ok  bool
	}{
		{"", true},
		{"Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==", true},
		{"abc-DEF_ghi.jkl~mno+pqr/stu", true},
		{"abcd1234", false},
		{"abc!def-0123456789-0123456789", false},
		{"two words 0123456789-0123456789", false},
		{"line\nbreak-0123456789-0123456789", false},
		{`quote"-0123456789-0123456789`, false},
		{"=leading-0123456789-0123456789", false},
	}
	for _, tt := range tests {
		c := defaultMCP()
		c.BearerToken = tt.tok
		err := c.validate()
		if (err == nil) != tt.ok {
			t.Errorf("bearer_token %q: %v, want ok=%v", tt.tok, err, tt.ok)
		}
		if err != nil && tt.tok != "" && strings.Contains(err.Error(), tt.tok) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
}
