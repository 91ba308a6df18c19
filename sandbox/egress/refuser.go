package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// NoNetwork is the refusal of a sandbox whose network.mode is none.
var NoNetwork = &Refusal{Reason: ReasonNoNetwork,
	Detail:  "this sandbox has no network (network.mode is none); nothing outside it is reachable",
	Setting: `the operator sets network.mode: allowlist and lists the domain in network.allow (user config)`}

// Refuser answers every proxy request on its listener with one refusal,
// at once: tools fail fast with a message instead of retrying DNS. It is
// what agentbox init serves when the network is off.
type Refuser struct {
	Refusal *Refusal
	// OnRefuse, when set, is called after each refusal (init uses it to
	// tell the command's stderr once).
	OnRefuse func()
}

// Serve answers connections until ctx ends.
func (f Refuser) Serve(ctx context.Context, ln net.Listener) error {
	return serveEach(ctx, ln, func(c net.Conn) {
		defer c.Close()
		// Read the request head (bounded) so the client is not reset
		// before it reads the answer.
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = peekHead(bufio.NewReaderSize(c, MaxHeaderBytes))
		writeRefusal(c, f.Refusal)
		if f.OnRefuse != nil {
			f.OnRefuse()
		}
	})
}

// serveEach runs handle for every connection ln accepts, each in its own
// goroutine, until ctx ends (then it closes ln and waits for them).
func serveEach(ctx context.Context, ln net.Listener, handle func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("egress accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(c)
		}()
	}
}
