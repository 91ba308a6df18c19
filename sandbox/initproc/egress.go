package initproc

import (
	"context"
	"net"
	"strconv"
	"sync"

	"github.com/agentbox/agentbox/sandbox/egress"
)

// EgressReq is the network of one command. The container has no
// interface but loopback; the command's proxy variables point at
// 127.0.0.1:Port, where init listens for as long as the command runs.
type EgressReq struct {
	// Port is the loopback port to listen on.
	Port int `json:"port"`
	// Socket is the egress proxy's unix socket (bind-mounted read-only).
	// Empty: the network is off and every request gets the "no network"
	// refusal at once.
	Socket string `json:"socket,omitempty"`
	// Token, Call and Session make up the preamble sent on every
	// relayed connection.
	Token   string `json:"token,omitempty"`
	Call    string `json:"call,omitempty"`
	Session string `json:"session,omitempty"`
}

// noNetworkNote is written to the command's stderr at the first refused
// connection when the network is off: tools often show only "403".
const noNetworkNote = "agentbox: this sandbox has no network (network.mode is none); the operator can set network.mode: allowlist and list the domain in network.allow\n"

// maxRefusalNotes bounds the refusals init repeats on a command's stderr.
const maxRefusalNotes = 5

// startEgress starts the listener and returns its stop. When the port
// cannot be bound the command runs anyway: it has no route out, so it
// fails closed (connection refused).
func startEgress(e EgressReq, note func(string)) (stop func()) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Port)))
	if err != nil {
		note("agentbox: the network relay could not start (" + err.Error() + "); nothing is reachable\n")
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if e.Socket == "" {
			var once sync.Once
			egress.Refuser{Refusal: egress.NoNetwork, OnRefuse: func() { once.Do(func() { note(noNetworkNote) }) }}.Serve(ctx, ln)
			return
		}
		var mu sync.Mutex
		seen := map[string]bool{}
		egress.Relay{Socket: e.Socket, Preamble: egress.Preamble{Token: e.Token,
			Caller: egress.Caller{Call: e.Call, Session: e.Session}},
			OnRefusal: func(text string) {
				mu.Lock()
				defer mu.Unlock()
				if !seen[text] && len(seen) < maxRefusalNotes {
					seen[text] = true
					note(text + "\n")
				}
			}}.Serve(ctx, ln)
	}()
	return func() { cancel(); <-done }
}
