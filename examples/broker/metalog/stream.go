package metalog

import (
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is Raft's TCP stream layer, keeping the connections it
// accepted and dialed so that Close closes them too: hashicorp/raft's
// NetworkTransport stops listening on Close, but a connection a peer
// opened stays blocked in its read until the peer hangs up, and its
// goroutine with it. A broker that stops (a test, a restart in the same
// process) must leave no goroutine behind.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	tls       *tls.Config // dials with it; nil: plain TCP (the listener is wrapped already)

	mu     sync.Mutex // guards the following
	conns  map[net.Conn]struct{}
	closed bool
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// listenStream listens on bind, with TLS when server and client are
// given (WithTLS): the voters' connections are then mutual TLS, each side
// verifying the other's certificate.
func listenStream(bind string, server, client *tls.Config) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: ln.Addr(), tls: client, conns: make(map[net.Conn]struct{})}
	if server != nil {
		s.ln = tls.NewListener(ln, server)
	}
	return s, nil
}

// track records c, or closes it if the layer is closed.
func (s *streamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	s.conns[c] = struct{}{}
	return &trackedConn{Conn: c, s: s}, nil
}

func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	var (
		c   net.Conn
		err error
	)
	if s.tls != nil {
		cfg := s.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(string(addr))
		}
		c, err = tls.DialWithDialer(d, "tcp", string(addr), cfg)
	} else {
		c, err = d.Dial("tcp", string(addr))
	}
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Close stops listening and closes every connection. Idempotent.
func (s *streamLayer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	err := s.ln.Close()
	for c := range conns {
		_ = c.Close()
	}
	return err
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	s    *streamLayer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c.Conn)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}
