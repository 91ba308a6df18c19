package egress

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnauthenticated is returned when a caller fails the peer or token
// check.
var ErrUnauthenticated = errors.New("caller not authenticated")

// Authenticator checks the token a relay presents. It is the seam for
// the shared front-door credential check.
type Authenticator interface {
	Authenticate(token string) error
}

// TokenAuth accepts exactly one token, compared in constant time.
type TokenAuth struct{ token []byte }

// NewTokenAuth returns a TokenAuth over a fresh random token (256 bits,
// hex) and the token to hand to the relay.
func NewTokenAuth() (*TokenAuth, string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, "", fmt.Errorf("egress token: %w", err)
	}
	t := hex.EncodeToString(b)
	return &TokenAuth{token: []byte(t)}, t, nil
}

// Authenticate implements Authenticator.
func (a *TokenAuth) Authenticate(token string) error {
	if len(a.token) == 0 || subtle.ConstantTimeCompare([]byte(token), a.token) != 1 {
		return ErrUnauthenticated
	}
	return nil
}

// PreambleMagic starts the one line a relay sends before the client's
// bytes.
const PreambleMagic = "AGENTBOX-EGRESS/1"

const maxPreamble = 1024

// Preamble is the relay's one-line introduction of a connection.
type Preamble struct {
	Token string
	Caller
}

// String renders the preamble line, newline included.
func (p Preamble) String() string {
	return fmt.Sprintf("%s token=%s call=%s session=%s\n", PreambleMagic,
		url.QueryEscape(p.Token), url.QueryEscape(p.Call), url.QueryEscape(p.Session))
}

// ReadPreamble reads and parses the preamble line.
func ReadPreamble(br *bufio.Reader) (Preamble, error) {
	var p Preamble
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if len(line) > maxPreamble {
			return p, fmt.Errorf("%w: preamble too long", ErrUnauthenticated)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return p, fmt.Errorf("%w: no preamble: %v", ErrUnauthenticated, err)
		}
	}
	f := strings.Fields(strings.TrimRight(string(line), "\r\n"))
	if len(f) == 0 || f[0] != PreambleMagic {
		return p, fmt.Errorf("%w: no preamble", ErrUnauthenticated)
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		v, err := url.QueryUnescape(v)
		if err != nil {
			return p, fmt.Errorf("%w: bad preamble", ErrUnauthenticated)
		}
		switch k {
		case "token":
			p.Token = v
		case "call":
			p.Call = v
		case "session":
			p.Session = v
		}
	}
	return p, nil
}

// peerUID returns the uid of the process on the other end of a unix
// socket (SO_PEERCRED).
func peerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("%w: not a unix socket", ErrUnauthenticated)
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}
