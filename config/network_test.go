package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNetworkConfig(t *testing.T) {
	const user = "network:\n  mode: allowlist\n  allow: ['@go', 'example.org', '*.example.net']\n  deny: ['bad.example.org']\n"
	tests := []struct {
		name, user, project string
		errHas              string
		check               func(t *testing.T, c *Config)
	}{
		{name: "default is none", check: func(t *testing.T, c *Config) {
			if c.Network.Mode != NetworkNone || len(c.Network.Allow) != 0 {
				t.Fatal(c.Network)
			}
		}},
		{name: "user allowlist", user: user, check: func(t *testing.T, c *Config) {
			if c.Network.Mode != NetworkAllowlist || len(c.Network.Allow) != 3 || len(c.Network.Warnings()) != 0 {
				t.Fatal(c.Network, c.Network.Warnings())
			}
		}},
		{name: "project removes an allow", user: user, project: "network:\n  allow: ['example.org']\n", check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Network.Allow, []string{"example.org"}) {
				t.Fatal(c.Network.Allow)
			}
		}},
		{name: "project adds an allow", user: user, project: "network:\n  allow: ['example.org', 'evil.example']\n", errHas: "may only remove"},
		{name: "project adds a deny", user: user, project: "network:\n  deny: ['example.org']\n", check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Network.Deny, []string{"bad.example.org", "example.org"}) {
				t.Fatal(c.Network.Deny)
			}
		}},
		{name: "project turns the network off", user: user, project: "network:\n  mode: none\n", check: func(t *testing.T, c *Config) {
			if c.Network.Mode != NetworkNone {
				t.Fatal(c.Network.Mode)
			}
		}},
		{name: "project turns the network on", project: "network:\n  mode: allowlist\n", errHas: "looser"},
		{name: "bad mode", user: "network:\n  mode: open\n", errHas: "network.mode"},
		{name: "bad rule", user: "network:\n  allow: ['ex*ample.org']\n", errHas: "network.allow"},
		{name: "unknown preset", user: "network:\n  allow: ['@nope']\n", errHas: "unknown preset"},
		{name: "wildcard over user content warns", user: "network:\n  mode: allowlist\n  allow: ['*.githubusercontent.com']\n", check: func(t *testing.T, c *Config) {
			if w := c.Network.Warnings(); len(w) != 1 {
				t.Fatal(w)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadWithProject(t, tt.user, tt.project)
			if tt.errHas != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
