// Package frontdoor owns the credentials of agentbox's front doors: every
// listener another process can reach (MCP over HTTP, the egress proxy,
// the operator dashboard) asks who is there before it serves a request.
// Loopback is not a boundary between local users, so a door is opened
// only by one of two things the kernel vouches for:
//
//   - a bearer token: 256 random bits kept in a file (Key) that only its
//     owner can read — mode 0600, owned by this uid, in a 0700 directory
//     under the state dir. Require wraps an http.Handler so that EVERY
//     request (not only the first on a connection) must carry
//     "Authorization: Bearer <token>"; tokens are compared in constant
//     time; a Key follows rotation by noticing that its file changed
//     (checked on each request with an lstat of the file and of its
//     directory), so a running server refuses the old token from the
//     next request on (and ends, within a second, requests still open
//     that were admitted with the old one), and refuses everything once
//     the file or its directory is opened to others;
//   - a unix socket in a 0700 directory (ListenUnix) whose listener
//     accepts only peers whose SO_PEERCRED uid (recorded by the kernel at
//     connect time) is this process's uid or root — or one named with
//     AllowUID, for which the directory is made 0711 and the socket 0666
//     so that it can connect, and the peer check alone turns others away.
//
// Either way, no directory above the token file or the socket may let
// another user swap it: each must belong to this uid or root and, when
// world-writable, be sticky (ErrInsecure otherwise).
//
// What it does not protect against: root, and any process of the same
// uid (it can read the token file and connect to the socket). Those are
// the owner.
//
// The package never logs, prints or returns a token in an error; a
// refusal says why in general terms and how to get the token (the
// caller's hint). It sits under config because sandbox/ and tools/ both
// import it and it imports nothing of agentbox but config/atomicfile.
// A *Key and a *Listener are safe for concurrent use.
package frontdoor
