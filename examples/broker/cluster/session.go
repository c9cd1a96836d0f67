package cluster

import (
	"time"

	"go.uber.org/zap"
)

// This broker's own view of its session at the active controller.
//
// The controller fences a broker broker.session.timeout.ms after the last
// heartbeat it received, and then elects other leaders for the partitions
// it led. A broker cut off from the controller by the network, though
// still reachable by its clients, cannot learn that from the metadata
// log, and without a view of its own would go on taking acks=1 records as
// leader, which the new leaders' logs do not hold and which it truncates
// when the network heals (Kafka's brokers do). So each broker counts its
// session from the sending of the last heartbeat the controller answered
// (the controller received it after it was sent, so its own count ends
// later), and once that count runs out it leads nothing (MayLead), before
// the controller can have elected anyone else in its place: its produces
// are answered NOT_LEADER_OR_FOLLOWER, which clients retry at the leaders
// the others name, and what waits on its partitions is woken to be
// answered so.
//
// It leads again on the next heartbeat the controller answers, if it was
// current when it sent it, or else if the heartbeat says it has caught up
// (is_caught_up: its image has reached the one the controller renewed its
// session on). Before it catches up its image may still name it leader of
// partitions the controller moved while it was fenced; the controller
// that fenced it committed that before it re-registered it, so an image
// that holds the registration holds the move. The active controller's own
// broker renews its session with its own controller, which counts only
// once a quorum of voters has answered it as leader after the heartbeat
// was sent (metalog's VerifyLeader): a new controller backdates the
// session of the controller it replaced to its last contact with it,
// which is then no earlier than the heartbeat.

// clock returns the time since the peers started, monotonic.
func (ps *peers) clock() time.Duration { return time.Since(ps.started) }

// renewed records that the controller answered a heartbeat sent at sent.
func (ps *peers) renewed(sent time.Duration) {
	for {
		last := ps.lastRenewed.Load()
		if int64(sent) <= last || ps.lastRenewed.CompareAndSwap(last, int64(sent)) {
			return
		}
	}
}

// sessionCurrent reports whether the session this broker counts has not
// run out.
func (ps *peers) sessionCurrent() bool {
	return ps.clock()-time.Duration(ps.lastRenewed.Load()) < ps.m.cfg.SessionTimeout
}

// noticeSession, on the heartbeat goroutine, tells the hook this broker's
// session began, ran out or came back, and logs a lapse and a return
// (not the first session); a broker stopping (no more heartbeats) is
// told nothing.
func (ps *peers) noticeSession() {
	current := ps.sessionCurrent()
	if current == ps.wasCurrent || ps.stopping.Load() || ps.m.ctx.Err() != nil {
		return
	}
	first := !ps.everCurrent
	ps.wasCurrent, ps.everCurrent = current, true
	switch {
	case !current:
		ps.m.log.Warn("no heartbeat answered by the controller within broker.session.timeout.ms: leading nothing until one is",
			zap.Duration("session", ps.m.cfg.SessionTimeout))
	case !first:
		ps.m.log.Info("a heartbeat answered by the controller again: leading what the metadata log says")
	}
	if hook := ps.m.sessionHook.Load(); hook != nil {
		(*hook)()
	}
}

// MayLead reports whether this broker may act as the leader its image
// names it: registered there (Registered), and, in a cluster, its session
// at the controller current as it counts it (see above). A broker alone
// always may.
func (m *Member) MayLead() bool {
	return m.Registered() && (m.peers == nil || m.peers.sessionCurrent())
}

// OnSessionChange sets f to be called, on the heartbeat goroutine, when
// this broker's session as it counts it runs out or comes back: what
// waits on the partitions it leads is to be checked again (MayLead).
func (m *Member) OnSessionChange(f func()) { m.sessionHook.Store(&f) }
