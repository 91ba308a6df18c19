package egress

import (
	"fmt"

	"golang.org/x/net/publicsuffix"
)

// Warnings returns a line for every allow entry that covers domains
// anyone can publish under: "*", and a wildcard whose domain is a public
// suffix (a shared hosting or user-content domain on the Public Suffix
// List, such as a cloud storage or gist domain). Data can leave through
// any allowed domain; these make that easy.
func Warnings(allow []string) []string {
	rules, _ := parseRules(allow)
	var out []string
	for _, r := range rules {
		switch {
		case r.All:
			out = append(out, fmt.Sprintf("network.allow %q allows every domain: anything the agent reads can be sent anywhere", r.Text))
		case r.Wildcard:
			probe := "x." + r.Host
			if ps, _ := publicsuffix.PublicSuffix(probe); ps == r.Host || ps == probe {
				out = append(out, fmt.Sprintf("network.allow %q covers a public suffix: every subdomain belongs to a different owner, and anyone can publish there (data can leave through it)", r.Text))
			}
		}
	}
	return out
}
