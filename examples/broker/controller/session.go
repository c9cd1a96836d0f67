package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/operation"
)

// session is a broker's session at the active controller: a delayed
// operation that a heartbeat completes (renewed) and that fences the
// broker if it expires first (Kafka's BrokerHeartbeatManager, as a
// purgatory operation).
type session struct {
	operation.State
	c       *Controller
	broker  int32
	renewed atomic.Bool // a heartbeat came: complete without fencing
	dropped atomic.Bool // the controller stepped down: complete without fencing
}

func (s *session) TryComplete() bool { return s.renewed.Load() }

// OnComplete fences the broker if the session expired. It runs on the
// purgatory's timer goroutine, which must never wait on a lock of ours
// (renewLocked holds c.mu while it adds to that timer): everything else,
// the check that the session is still current and the proposal, which
// waits for the quorum, runs on a goroutine of its own.
func (s *session) OnComplete() {
	if s.Outcome() != operation.Expired || s.dropped.Load() {
		return
	}
	c := s.c
	c.wg.Add(1) // before Close's Wait: Close closes the purgatory first
	go func() {
		defer c.wg.Done()
		c.expire(s)
	}()
}

// expire fences s's broker if s is still its current session at an active
// controller: a heartbeat may have renewed it, or the controller stepped
// down, since it expired.
func (c *Controller) expire(s *session) {
	c.mu.Lock()
	current := c.sessions[s.broker] == s && c.active && !c.closed
	if current {
		delete(c.sessions, s.broker)
		c.fencing[s.broker] = true
	}
	c.mu.Unlock()
	if current {
		c.fence(s.broker)
		c.mu.Lock()
		delete(c.fencing, s.broker)
		c.mu.Unlock()
	}
}

// fence commits broker's fencing, with the elections it takes.
func (c *Controller) fence(broker int32) {
	var moved int
	_, err := c.decide(context.Background(), func(im *metadata.Image) (metadata.Record, error) {
		c.mu.Lock()
		_, renewed := c.sessions[broker] // a heartbeat came since it expired
		c.mu.Unlock()
		if renewed {
			return metadata.Record{}, nil
		}
		rec := metadata.Fence(im, broker, c.uncleanDefault(im))
		moved = len(rec.Partitions)
		return rec, nil
	})
	if err != nil {
		c.zlog.Warn("controller: fencing a broker whose session expired", zap.Int32("broker", broker), zap.Error(err))
		return
	}
	c.zlog.Info("controller: fenced a broker whose session expired", zap.Int32("broker", broker),
		zap.Int("partitions_changed", moved))
}

// Heartbeat records that broker, in its incarnation epoch, is alive
// (Kafka's BrokerHeartbeat and BrokerRegistration in one): a broker not
// registered at that epoch, or fenced, is registered and unfenced first
// (package metadata, Register), then its session is renewed. It returns
// ErrNotController on a controller that is not active.
func (c *Controller) Heartbeat(ctx context.Context, broker int32, epoch int64) error {
	_, err := c.HeartbeatAt(ctx, broker, epoch)
	return err
}

// HeartbeatAt is Heartbeat, and returns the index of the record that
// registered the broker again (it was fenced, or restarted), 0 if it was
// registered already: a broker whose own image is behind that index has
// not caught up (BrokerHeartbeatResponse's is_caught_up, as Kafka compares
// a broker's offset with its registration's), and may still name itself
// leader of partitions the controller moved when it fenced it.
func (c *Controller) HeartbeatAt(ctx context.Context, broker int32, epoch int64) (uint64, error) {
	if c.purgatory == nil || !c.isBroker(broker) {
		return 0, nil // a broker alone has no session
	}
	c.mu.Lock()
	stopping := c.shutdown[broker] == epoch
	c.mu.Unlock()
	if stopping {
		return 0, nil // a heartbeat sent before its shutdown request: it stays fenced
	}
	registered := false
	im, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		rec := metadata.Register(im, broker, epoch, c.uncleanDefault(im))
		registered = !rec.Empty()
		return rec, nil
	})
	if errors.Is(err, ErrNotController) {
		c.maybeActivate()
	}
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active {
		return 0, ErrNotController
	}
	c.renewLocked(broker)
	c.resumeSessionsLocked(im)
	if !registered {
		return 0, nil
	}
	return im.Index, nil
}

// resumeSessionsLocked gives a fresh session to every broker im has
// unfenced that has none, and is not shutting down: one whose expiry
// found the controller unable to commit its fencing (a decision failed:
// the session is gone, its broker still unfenced). Without it, a broker
// that died then would never be fenced; with it, its fencing is retried
// a session timeout later. Each heartbeat runs it: O(brokers).
//
// REQUIRES: c.mu held, c.active.
func (c *Controller) resumeSessionsLocked(im *metadata.Image) {
	for _, id := range c.brokers {
		if c.sessions[id] != nil || c.fencing[id] || im.Fenced(id) {
			continue
		}
		if b, ok := im.Broker(id); ok && c.shutdown[id] == b.Epoch {
			continue // its controlled shutdown fences it
		}
		c.zlog.Info("controller: an unfenced broker had no session: a new one starts", zap.Int32("broker", id))
		c.renewLocked(id)
	}
}

func (c *Controller) isBroker(id int32) bool {
	for _, b := range c.brokers {
		if b == id {
			return true
		}
	}
	return false
}

// renewLocked completes broker's session, if any, as renewed, and submits
// a new one with the full session timeout.
//
// REQUIRES: c.mu held (the purgatory's calls take no lock of ours: the
// completed session's OnComplete returns at once, as renewed).
func (c *Controller) renewLocked(broker int32) { c.renewForLocked(broker, c.cfg.session) }

// renewForLocked is renewLocked with a session that expires after left.
//
// REQUIRES: c.mu held.
func (c *Controller) renewForLocked(broker int32, left time.Duration) {
	if old := c.sessions[broker]; old != nil {
		old.renewed.Store(true)
		c.purgatory.CheckAndComplete(broker)
	}
	s := &session{c: c, broker: broker}
	c.sessions[broker] = s
	if _, err := c.purgatory.TryCompleteElseWatch(s, left, broker); err != nil {
		delete(c.sessions, broker) // the purgatory is closing
	}
}

// sessionsAtActivationLocked gives every unfenced broker a session as a
// new controller takes office (Kafka's starts them all afresh: a broker
// that died with the old controller is fenced too). The old controller
// itself gets what is left of a session counted from when this broker
// last heard from it as the quorum's leader (previousLeader): it sent no
// heartbeat anywhere this controller could see since, and a kill -9 of a
// broker that led both the quorum and partitions is then fenced as soon
// as any other broker's, not a Raft election later. It keeps at least
// two heartbeat intervals, so that a live old controller, once it follows
// the new one, renews its session before it expires: it is never fenced
// for the election's length alone.
//
// REQUIRES: c.mu held, c.active.
func (c *Controller) sessionsAtActivationLocked(im *metadata.Image) {
	prev, silent, ok := c.previousLeader()
	for _, id := range c.brokers {
		if im.Fenced(id) {
			continue
		}
		if left := c.cfg.session - silent; ok && id == prev && left < c.cfg.session {
			left = max(left, 2*c.cfg.heartbeat)
			c.zlog.Info("controller: the previous controller's session counts from its last word to this broker",
				zap.Int32("broker", id), zap.Duration("silent", silent), zap.Duration("session_left", left))
			c.renewForLocked(id, left)
			continue
		}
		c.renewLocked(id)
	}
}

// previousLeader returns the quorum's previous leader as the metadata log
// saw it, and for how long it has been silent to this broker.
func (c *Controller) previousLeader() (id int32, silent time.Duration, ok bool) {
	if c.prevLeader != nil {
		return c.prevLeader()
	}
	id, at, ok := c.log.PreviousLeader()
	return id, time.Since(at), ok
}

// Shutdown fences broker at its request (Kafka's controlled shutdown: a
// BrokerHeartbeat with want_shutdown): its session ends without expiring,
// and the same record as an expired session's moves its leaderships to
// the other replicas of their ISRs and takes it out of every ISR, while
// it still serves, so that clients move with no wait for a session
// timeout. A request at an epoch the broker is no longer registered at
// changes nothing.
func (c *Controller) Shutdown(ctx context.Context, broker int32, epoch int64) error {
	if c.purgatory == nil || !c.isBroker(broker) {
		return nil
	}
	c.mu.Lock()
	c.shutdown[broker] = epoch // its heartbeats at this epoch no longer register it
	if s := c.sessions[broker]; s != nil {
		s.dropped.Store(true)
		s.ForceComplete()
		delete(c.sessions, broker)
	}
	c.mu.Unlock()
	var moved int
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		if b, ok := im.Broker(broker); ok && b.Epoch != epoch {
			return metadata.Record{}, nil
		}
		rec := metadata.Fence(im, broker, c.uncleanDefault(im))
		moved = len(rec.Partitions)
		return rec, nil
	})
	if err == nil {
		c.zlog.Info("controller: fenced a broker shutting down", zap.Int32("broker", broker), zap.Int("partitions_changed", moved))
	}
	return err
}
