package mcp

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// ErrInsecureListen is returned by CheckListen for a non-loopback address
// without a bearer token.
var ErrInsecureListen = errors.New("refusing to listen on a non-loopback address without a bearer token")

// CheckListen decides whether agentbox may serve MCP over HTTP on addr.
// A loopback address (127.0.0.0/8, ::1, "localhost") is always allowed; any
// other address, including the wildcard ("", 0.0.0.0, ::), needs a bearer
// token, because whoever reaches the port can run commands in the
// workspace.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if IsLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %s (set mcp.bearer_token or AGENTBOX_MCP_BEARER_TOKEN, or listen on 127.0.0.1)", ErrInsecureListen, addr)
}

// IsLoopback reports whether host names only the loopback interface.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// RequireBearer wraps h so that every request must carry
// "Authorization: Bearer token". An empty token disables the check (only
// CheckListen decides when that is acceptable). The comparison is constant
// time.
func RequireBearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
