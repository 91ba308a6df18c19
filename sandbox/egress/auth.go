package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/agentbox/agentbox/config/frontdoor"
)

// ErrUnauthenticated is returned when a caller fails the peer or token
// check.
var ErrUnauthenticated = errors.New("caller not authenticated")

// NewToken returns a verifier over a fresh random token and the token to
// hand to the relay. The token and its check are the front door's
// (config/frontdoor): one mechanism guards every door agentbox opens.
func NewToken() (frontdoor.Verifier, string, error) {
	t, err := frontdoor.NewToken()
	if err != nil {
		return nil, "", fmt.Errorf("egress token: %w", err)
	}
	return frontdoor.Fixed(t), t, nil
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

// readPreamble reads and parses the preamble line.
func readPreamble(br *bufio.Reader) (Preamble, error) {
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
			return p, fmt.Errorf("%w: no preamble: %w", ErrUnauthenticated, err)
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
// socket, as the kernel reports it (frontdoor.PeerCred).
func peerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("%w: not a unix socket", ErrUnauthenticated)
	}
	p, err := frontdoor.PeerCred(uc)
	if err != nil {
		return 0, err
	}
	return p.UID, nil
}
