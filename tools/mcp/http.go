package mcp

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrInsecureListen is returned by CheckListen for a non-loopback address
// without an explicit bearer token.
var ErrInsecureListen = errors.New("refusing to listen on a non-loopback address without a bearer token")

// CheckListen decides whether agentbox may serve MCP over HTTP on addr.
// Every request needs a bearer token wherever it listens (frontdoor); a
// loopback address (127.0.0.0/8, ::1, "localhost") takes the token file's,
// any other address, including the wildcard ("", 0.0.0.0, ::), only an
// explicitly configured token (mcp.bearer_token): exposing the door to a
// network is a decision the operator makes on purpose.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %s (set mcp.bearer_token or AGENTBOX_MCP_BEARER_TOKEN, or listen on 127.0.0.1)", ErrInsecureListen, addr)
}

// isLoopback reports whether host names only the loopback interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
