package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/sandbox/egress"
)

// Network is the "network" section: whether and where sandboxed commands
// (and host-side fetches) may connect. The container never has a network
// interface; with mode allowlist its only way out is agentbox's egress
// proxy, which applies these lists (see sandbox/egress).
type Network struct {
	// Mode is "none" (the default: nothing is reachable, tools fail fast
	// with a message) or "allowlist" (the proxy decides each connection).
	Mode string `mapstructure:"mode" yaml:"mode"`
	// Allow lists reachable destinations: "example.org", "*.example.org"
	// (subdomains only), an optional ":port", an exact address
	// ("192.0.2.7", "[2001:db8::1]:443"), "*" (every name, never a bare
	// address) and presets ("@go", "@npm", "@pypi", "@crates", "@github",
	// "@debian", "@tls-revocation"). A project config may only remove
	// entries.
	Allow []string `mapstructure:"allow" yaml:"allow"`
	// Deny lists refused destinations, in the same syntax; a deny is
	// never overridden by an allow or an approval. "*" alone means
	// "refuse whatever is not allowed, without asking". A project config
	// may only add entries.
	Deny []string `mapstructure:"deny" yaml:"deny"`
	// FetchMaxBytes caps what the WebFetch tool reads of one page.
	FetchMaxBytes int64 `mapstructure:"fetch_max_bytes" yaml:"fetch_max_bytes"`
	// FetchTimeout bounds one WebFetch call, redirects included.
	FetchTimeout time.Duration `mapstructure:"fetch_timeout" yaml:"fetch_timeout"`
}

// Network modes.
const (
	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
)

func defaultNetwork() Network {
	return Network{Mode: NetworkNone, FetchMaxBytes: 10 << 20, FetchTimeout: 30 * time.Second}
}

func (n *Network) validate() error {
	if n.Mode != NetworkNone && n.Mode != NetworkAllowlist {
		return fmt.Errorf("network.mode %q: want none or allowlist", n.Mode)
	}
	if n.FetchMaxBytes <= 0 || n.FetchMaxBytes > 100<<20 {
		return fmt.Errorf("network.fetch_max_bytes %d: want more than 0 and at most 100 MiB", n.FetchMaxBytes)
	}
	if n.FetchTimeout <= 0 || n.FetchTimeout > 10*time.Minute {
		return fmt.Errorf("network.fetch_timeout %s: want more than 0 and at most 10m", n.FetchTimeout)
	}
	if _, err := egress.NewPolicy(n.Allow, n.Deny); err != nil {
		return fmt.Errorf("network.allow/network.deny: %w", err)
	}
	return nil
}

// Warnings are things about the network lists the operator should know
// but that are not errors: wildcards over domains where anyone can publish
// content (data can leave through any allowed domain).
func (n *Network) Warnings() []string {
	if n.Mode == NetworkNone {
		return nil
	}
	return egress.Warnings(n.Allow)
}

// networkModeStrictness orders network.mode from loosest to strictest.
func networkModeStrictness(m string) int {
	return slices.Index([]string{NetworkAllowlist, NetworkNone}, m)
}
