package replica

import (
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Replication throttles (KIP-73), as Kafka 4 enforces them: a topic's
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name partition:broker pairs, and
// each broker applies the entries naming itself (storage.ThrottledReplicas)
// against its two quotas, leader.replication.throttled.rate and
// follower.replication.throttled.rate (quota.Replication, Kafka's
// SimpleRate over quota.window.num windows).
//
//   - The leader (delayed_fetch.go): a follower's fetch of a partition the
//     leader's list names for this broker, from a follower out of the ISR
//     while the leader quota is exceeded, is answered with no records (its
//     offsets and high watermark still), and does not count towards the
//     fetch's min_bytes, so that it waits its max_wait_ms rather than
//     spin. The records sent of the listed partitions are recorded in the
//     quota, to in-sync followers too (Kafka's
//     sizeOfThrottledPartitions): they share the bandwidth the limit
//     bounds.
//   - The follower (fetcher.go): a partition the follower's list names for
//     this broker, not caught up with the leader's high watermark at its
//     last fetch, is left out of the fetch while the follower quota is
//     exceeded; what the listed partitions bring is recorded.
//
// An in-sync replica is never throttled (Kafka's "to avoid ISR
// thrashing"): a throttle slows a reassignment's new replica, or a
// replica catching up after an outage, never one the ISR holds. Neither
// throttle cuts a fetch short: the quota is checked before a partition is
// read, so the rate runs over by at most one fetch's bytes, and then
// waits for the windows to bring it down.

// leaderThrottled reports whether p, which this broker leads and whose
// topic's leader list names it here (leaderListed, which the caller
// checked), is held back from follower now (Kafka's
// shouldLeaderThrottle): follower is not in p's ISR, and the leader quota
// is exceeded.
func (m *Manager) leaderThrottled(p *storage.Partition, follower int32) bool {
	if m.cfg.LeaderQuota == nil {
		return false
	}
	st, _ := m.partitionState(p)
	return m.cfg.LeaderQuota.ShouldThrottle(true, slices.Contains(st.ISR, follower))
}

// leaderListed reports whether the topic's
// leader.replication.throttled.replicas names p on this broker: its bytes
// sent to followers count in the leader quota (Kafka's isThrottled).
func (m *Manager) leaderListed(p *storage.Partition) bool {
	return p.Topic().Config().LeaderThrottled.Names(p.Index(), m.member.Self())
}

// listed reports whether the topic's
// follower.replication.throttled.replicas names p on this broker.
func (fe *Fetcher) listed(p *storage.Partition) bool {
	return p.Topic().Config().FollowerThrottled.Names(p.Index(), fe.cfg.Self)
}

// unthrottled returns parts without those the follower throttle holds
// back now (Kafka's shouldFollowerThrottle): listed, not in sync at their
// last fetch (inSync), while the follower quota is exceeded.
func (fe *Fetcher) unthrottled(parts []*storage.Partition, inSync map[*storage.Partition]bool) []*storage.Partition {
	if fe.cfg.Quota == nil {
		return parts
	}
	return slices.DeleteFunc(parts, func(p *storage.Partition) bool {
		return fe.cfg.Quota.ShouldThrottle(fe.listed(p), inSync[p])
	})
}
