// Package egress owns the way out of a sandbox: the network policy
// (domains, wildcards, ports, exact addresses, presets), the dialer that
// resolves a name only after it passed the policy and dials the address it
// checked, and the proxy that containers reach over a unix socket.
//
// Promises:
//   - A name is resolved only after the policy (or an approval) allowed it;
//     every A and AAAA answer is judged, and the connection goes to the
//     checked address, never to the name again (no DNS rebinding).
//   - Loopback, private, link-local (metadata), CGNAT, ULA, multicast,
//     unspecified, reserved, the host's own and the engine bridge's
//     addresses, and their v4-mapped, NAT64 and 6to4 forms are refused
//     unless the operator listed that exact address.
//   - IP literals, in any spelling inet_aton accepts, are reached only
//     when listed.
//   - An explicit deny is never overridden, by an allow or an approval.
//   - The proxy serves HTTP forward requests and CONNECT only; a CONNECT
//     tunnel carries TLS whose ClientHello names the CONNECT host.
//   - Every caller of the proxy is authenticated (SO_PEERCRED and a token
//     in a one-line preamble) and every connection attempt is reported to
//     the injected audit callback.
//
// The package knows nothing of tools, snapshots or the container: the
// caller injects the resolver, the approver, the audit sink and the token
// check. Policy, Dialer, Gate and Server are safe for concurrent use once
// built.
package egress
