package consumergroup

import "go.uber.org/zap"

// Each member has three timer tasks of the coordinator's timer, embedded
// in it, as Kafka's CoordinatorTimer keys one task per member and kind:
//
//   - its session: every heartbeat moves it group.consumer.session.timeout.ms
//     ahead (Timer.Reschedule, O(1)); when it fires the member is removed
//     and the group epoch bumped, so the others take its partitions.
//   - its rebalance timeout, running while it must revoke partitions: set
//     when it is told to revoke at an epoch, cancelled once it has; when
//     it fires the member is removed (fenced), so that a consumer stuck
//     in its revocation does not hold the group back for ever.
//   - a classic member's join or sync timeout (classic.go): set, for its
//     rebalance timeout, when it is told to rejoin (unless running) and
//     again when it joins; cancelled when it syncs; when it fires the
//     member is removed, as one that heartbeats but never rejoins would
//     hold its partitions for ever.
//
// A task that fires runs with no lock held and takes the group's mutex.
// A heartbeat may move the task again just as it fires: the task then
// finds its due time (sessionDue, rebalanceDue, classicDue) still ahead, or its member
// gone or replaced, and does nothing. Nothing scans the members: a timeout
// costs O(1) on the timer whatever the number of members.

// memberTimer is one of a member's three tasks: its session, its
// rebalance timeout, or its classic join or sync timeout.
type memberTimer struct {
	c           *Coordinator
	m           *member
	rebalance   bool
	classicWait bool // a classic member's join or sync timeout
}

// Run removes the member if the timeout is still its current one and
// has passed: its session expired, or it still has not revoked what it
// was told to at the epoch its rebalance timeout was set.
func (r memberTimer) Run() {
	empty, classicOnly := r.expire()
	switch {
	case empty:
		r.c.emptied(r.m.g.id)
	case classicOnly && r.c.cfg.onClassicOnly != nil && !r.c.closed.Load():
		r.c.cfg.onClassicOnly(r.m.g.id)
	}
}

// expire is Run under the group's mutex, which it takes: it reports
// whether it removed the group's last member, or its last member of the
// consumer protocol, leaving classic members alone.
func (r memberTimer) expire() (empty, classicOnly bool) {
	m, g := r.m, r.m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone || g.members[m.id] != m {
		return false, false // removed or replaced
	}
	now := r.c.clk.Now()
	switch {
	case r.classicWait && m.classicDue != 0 && now >= m.classicDue:
		r.c.log.Info("classic consumer group member did not join or sync within its rebalance timeout; fenced",
			zap.String("group", g.id), zap.String("member", m.id), zap.Int32("member_epoch", m.epoch))
	case r.classicWait:
		return false, false // joined or synced meanwhile
	case !r.rebalance && now >= m.sessionDue:
		r.c.log.Info("consumer group member's session expired", zap.String("group", g.id), zap.String("member", m.id),
			zap.String("instance_id", m.instanceID))
	case r.rebalance && m.rebalanceDue != 0 && now >= m.rebalanceDue &&
		m.state == unrevokedPartitions && m.epoch == m.rebalanceEpoch:
		r.c.log.Info("consumer group member did not revoke its partitions within its rebalance timeout; fenced",
			zap.String("group", g.id), zap.String("member", m.id), zap.Int32("member_epoch", m.epoch))
	default:
		return false, false // heartbeating again, or revoked
	}
	g.removeLocked(m, r.c.tm)
	r.c.storeQuietlyLocked(g)
	return len(g.members) == 0, m.classic == nil && g.onlyClassicLocked()
}

// armRebalanceLocked starts m's rebalance timeout when it has just been
// told to revoke partitions at its epoch, and stops it once it has none
// to revoke (Kafka's scheduleConsumerGroupRebalanceTimeout and its
// cancellation).
//
// REQUIRES: m.g.mu held.
func (c *Coordinator) armRebalanceLocked(m *member) {
	switch {
	case m.state != unrevokedPartitions:
		if m.rebalanceDue != 0 {
			c.tm.Cancel(&m.rebalance)
			m.rebalanceDue = 0
		}
	case m.rebalanceDue == 0 || m.rebalanceEpoch != m.epoch:
		m.rebalanceDue, m.rebalanceEpoch = c.clk.Now()+m.rebalanceTimeout, m.epoch
		// Positive unless the member asked for 0 ms: Reschedule would
		// then run the task at once, which takes the group's mutex, so
		// the timeout is at least one tick.
		_, _ = c.tm.Reschedule(&m.rebalance, max(m.rebalanceTimeout, minTimeout)) // fails only once closed
	}
}
