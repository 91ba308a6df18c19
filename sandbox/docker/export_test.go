package docker

// SocketLister exposes the socket set to the package's external tests
// (the benchmark wires it to a real snapshot watcher, which this package
// must not import).
type SocketLister struct{ sw *socketWalk }

// NewSocketLister returns a socket set fed by feed (nil: walk every time).
func NewSocketLister(feed func() (map[string]bool, bool)) *SocketLister {
	return &SocketLister{sw: &socketWalk{feed: feed}}
}

// Sockets lists the sockets beneath the O_PATH directory ws.
func (l *SocketLister) Sockets(ws int) ([]string, error) { return l.sw.sockets(ws) }

// Walks counts the full walks made.
func (l *SocketLister) Walks() int { return l.sw.walks }
