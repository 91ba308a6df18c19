package config

import (
	"fmt"
	"slices"

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
}

// Network modes.
const (
	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
)

func defaultNetwork() Network { return Network{Mode: NetworkNone} }

func (n *Network) validate() error {
	if n.Mode != NetworkNone && n.Mode != NetworkAllowlist {
		return fmt.Errorf("network.mode %q: want none or allowlist", n.Mode)
	}
	if _, err := egress.NewPolicy(n.Allow, n.Deny); err != nil {
		return fmt.Errorf("network.allow/network.deny: %v", err)
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
