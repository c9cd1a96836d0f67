package kafkanet

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"go.uber.org/zap"
)

// Accept backoff, as net/http's Server sleeps after a failed Accept: from
// acceptBackoffMin, doubling, up to acceptBackoffMax, reset by the next
// connection accepted.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptLoop accepts connections from ln until Close. No accept error
// ends it: at the file-descriptor limit (EMFILE), or short of kernel
// memory, Accept fails until connections close, and Kafka, like net/http,
// logs the failure and tries again after a pause; so does this loop,
// counting each failure (refuseAcceptError) and logging it at most once a
// minute. A connection past max.connections, or past
// max.connections.per.ip from its host, is closed as soon as it is
// accepted, counted and logged, as Kafka closes it. One that takes its
// IP over its connection_creation_rate quota is held unserved and closed
// after its throttle time (conn_rate.go), before it counts against
// either. It returns nil after Close.
func (s *Server) acceptLoop(ln net.Listener) error {
	l, _ := ln.(*Listener) // a bare net.Listener is PLAINTEXT
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			s.refusals.refuse(nil, refuseAcceptError, zap.Error(err), zap.Duration("retry_in", delay))
			select {
			case <-time.After(delay):
			case <-s.closing:
				return nil
			}
			continue
		}
		delay = 0
		if s.throttleConnection(nc) {
			continue
		}
		if l != nil && l.tls != nil {
			nc = tls.Server(nc, l.tls) // the handshake is the reader's (Conn.handshakeTLS)
		}
		c := newConn(s, nc, l)
		switch reason := s.admit(c); reason {
		case "":
		case closedReason:
			_ = nc.Close()
			return nil
		default:
			// Counted before the close, so that whoever sees the
			// connection closed sees it counted.
			s.refusals.refuse(c.remote, reason, zap.Int("max.connections", s.cfg.maxConns),
				zap.Int("max.connections.per.ip", s.cfg.maxConnsPerIP))
			_ = nc.Close()
			continue
		}
		s.metrics.connections.Inc()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.forget(c)
			s.metrics.connections.Dec()
		}()
	}
}

// closedReason is admit's answer once the server is closed.
const closedReason = "closed"

// admit registers c if max.connections and max.connections.per.ip allow
// it, and returns "" then, or why not.
func (s *Server) admit(c *Conn) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return closedReason
	case len(s.conns) >= s.cfg.maxConns:
		return refuseMaxConnections
	case s.perIP[c.host] >= s.cfg.maxConnsPerIP:
		return refuseMaxConnectionsPerIP
	}
	s.conns[c] = struct{}{}
	s.perIP[c.host]++
	s.wg.Add(1)
	return ""
}

// forget unregisters a connection that has ended.
func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.perIP[c.host]--; s.perIP[c.host] <= 0 {
		delete(s.perIP, c.host)
	}
}
