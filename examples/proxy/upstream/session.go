package upstream

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Session is one client connection's connections upstream, one per broker,
// opened on first use and replaced once dead. See the package
// documentation.
type Session struct {
	cl       *Cluster
	clientID string // immutable: the client's, on every request

	mu      sync.Mutex // guards the following
	conns   map[int32]*Conn
	retired []*Conn // replaced, to wait for at Close
	closed  bool
}

// NewSession returns a session whose requests carry clientID.
func (cl *Cluster) NewSession(clientID string) *Session {
	return &Session{cl: cl, clientID: clientID, conns: make(map[int32]*Conn)}
}

// Send sends req to broker node on the session's connection to it, as
// Conn.Send does; an unknown broker fails it with ErrUnknownBroker, before
// Send returns.
func (s *Session) Send(node int32, req kmsg.Request, done func(kmsg.Response, error)) {
	addr, ok := s.cl.Addr(node)
	if !ok {
		done(nil, fmt.Errorf("%w: %d", ErrUnknownBroker, node))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		done(nil, ErrClosed)
		return
	}
	c := s.conns[node]
	if c == nil || c.Dead() || c.addr != addr {
		if c != nil {
			c.Close()
			s.retired = append(prune(s.retired), c)
		}
		c = s.cl.newConn(node, addr, s.clientID)
		s.conns[node] = c
	}
	s.mu.Unlock()
	c.Send(req, done)
}

// Close closes the session's connections, failing what is in flight with
// ErrClosed, and waits for their goroutines. Idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := append(s.retired, values(s.conns)...)
	s.conns, s.retired = nil, nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	for _, c := range conns {
		<-c.Done()
	}
}
