package kafkanet

import (
	"time"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// Throttles: a quota's mute of a connection (KIP-219, Kafka's
// ThrottledChannel and its channel's MUTED_AND_THROTTLED state). A
// handler answers the request that took its client over a quota at once,
// with the throttle time in the answer, and calls Request.Throttle: the
// connection's reader then reads no further request until the time has
// passed, while its writer goes on writing what is owed, so that a client
// that ignores the answer's throttle_time_ms is held back anyway, and one
// that honours it (every client since Kafka 2.0) never notices.
//
// The end of a mute is a delayed operation in the server's "Throttle"
// purgatory, keyed by the connection, that expires at the throttle's end
// (or completes when the connection closes): no goroutine sleeps for it.
// The reader waits on the connection's cond while muted, as it waits for
// room in the response queue, and a drain or a failed write ends the wait.
//
// Throttles overlap: a connection is muted while any is pending (mutes).

// Throttle mutes r's connection for d: its reader reads no request after
// the one it is reading when Throttle is called until d has passed on the
// server's clock (WithThrottleClock), and its answers go on being
// written. A handler calls it when it answers a request with a throttle
// time, with that time, at once or later (a delayed produce's answer),
// from any goroutine. d of 0 or less does nothing; so does a connection
// closed or draining. O(1): one operation in the Throttle purgatory.
func (r *Request) Throttle(d time.Duration) { r.conn.throttle(d) }

func (c *Conn) throttle(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	if c.closed || c.draining {
		c.mu.Unlock()
		return
	}
	c.mutes++
	c.mu.Unlock()
	p := c.s.throttlePurgatory()
	if p == nil {
		c.unmute() // the server drained: nothing reads on
		return
	}
	op := operation.NewFunc(nil, c.unmute, nil)
	if _, err := p.TryCompleteElseWatchContext(c.ctx, op, d, c); err != nil {
		c.unmute() // not taken (closed meanwhile, or the connection gone): no mute
	}
}

// unmute ends one of the connection's throttles, and wakes its reader.
// The Throttle operation's OnComplete: at the throttle's end, or when the
// connection's context is cancelled, or the purgatory closes.
func (c *Conn) unmute() {
	c.mu.Lock()
	c.mutes--
	c.mu.Unlock()
	c.cond.Broadcast()
}

// awaitUnmutedLocked waits while the connection is muted, unless it closes or
// drains meanwhile; the muted gauge counts the readers waiting.
//
// REQUIRES: c.mu held; it is released while waiting.
func (c *Conn) awaitUnmutedLocked() {
	if c.mutes == 0 || c.closed || c.draining {
		return
	}
	c.s.metrics.muted.Inc()
	for c.mutes > 0 && !c.closed && !c.draining {
		c.cond.Wait()
	}
	c.s.metrics.muted.Dec()
}

// throttlePurgatory returns the Throttle purgatory, made at the first
// throttle (a server that never throttles runs no reaper for it); nil
// once Drain has closed it.
func (s *Server) throttlePurgatory() *purgatory.Purgatory[*Conn] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.throttles == nil && !s.throttlesClosed {
		opts := []purgatory.Option{purgatory.WithLogger(s.log)}
		if s.cfg.reg != nil {
			opts = append(opts, purgatory.WithRegisterer(s.cfg.reg))
		}
		if s.cfg.throttleClock != nil {
			opts = append(opts, purgatory.WithClock(s.cfg.throttleClock))
		}
		p, err := purgatory.New[*Conn]("Throttle", opts...)
		if err != nil {
			// Only a second registration of its metrics fails, and
			// there is one Throttle purgatory per server: a bug.
			s.log.Error("no Throttle purgatory: throttled connections are not muted")
			s.throttlesClosed = true
			return nil
		}
		s.throttles = p
	}
	return s.throttles
}

// closeThrottles closes the Throttle purgatory, if made: Drain calls it
// once every connection has gone, so none waits in it.
func (s *Server) closeThrottles() {
	s.mu.Lock()
	p := s.throttles
	s.throttlesClosed = true
	s.mu.Unlock()
	if p != nil {
		_ = p.Close()
	}
}
