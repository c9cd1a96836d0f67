package server

import (
	"context"
	"sync"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// clientSession is a client connection's side of upstream: its session of
// its own (package upstream, one connection per upstream broker), opened
// on the first request the proxy forwards, with that request's client id,
// and closed with the client's connection. It lives in the connection's
// context (kafkanet.WithConnContext), and the network layer's
// WithConnClosed closes it.
//
// Lock order: clientSession.mu is a leaf.
type clientSession struct {
	cl *upstream.Cluster // immutable

	mu     sync.Mutex // guards the following
	sess   *upstream.Session
	closed bool
}

type sessionKey struct{}

// withSession is the proxy's kafkanet.WithConnContext: each connection's
// context carries its clientSession.
func (s *Server) withSession(ctx context.Context, _ *kafkanet.Conn) context.Context {
	return context.WithValue(ctx, sessionKey{}, &clientSession{cl: s.cl})
}

// closeSession is the proxy's kafkanet.WithConnClosed: the client's
// upstream connections close with its own.
func closeSession(c *kafkanet.Conn) {
	if cs, ok := c.Context().Value(sessionKey{}).(*clientSession); ok {
		cs.close()
	}
}

// upstream returns the session of r's connection, opened with r's client
// id if it is the first; nil once the connection is closed.
func (r *request) upstream() *upstream.Session {
	cs, ok := r.Context().Value(sessionKey{}).(*clientSession)
	if !ok {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil
	}
	if cs.sess == nil {
		cs.sess = cs.cl.NewSession(r.ClientID)
	}
	return cs.sess
}

// close closes the session, if one was opened. Idempotent.
func (cs *clientSession) close() {
	cs.mu.Lock()
	sess := cs.sess
	cs.closed = true
	cs.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}
