package replica

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Who leads a partition, at which leader epoch, with which ISR, is the
// metadata log's, read from the image this broker has applied (package
// cluster), never decided here; what this broker may do with it is below.

// partitionState returns p's replicas, leader, epochs and ISR as the image
// has them; ok is false for a partition the image lacks (its topic
// deleted, or not yet applied here).
func (m *Manager) partitionState(p *storage.Partition) (metadata.Partition, bool) {
	st, err := m.member.Image().Partition(metadata.TopicID(p.Topic().ID), p.Index())
	return st, err == nil
}

// State returns p's replicas, leader, epochs and ISR as the image has
// them and as this broker may act on them: a partition it leads in the
// image is led by nobody here until it is registered, nor while its
// session at the controller has run out as it counts it (cluster.Member's
// MayLead). ok is false for a partition the image lacks (its topic
// deleted, or not yet applied here).
func (m *Manager) State(p *storage.Partition) (metadata.Partition, bool) {
	st, ok := m.partitionState(p)
	if ok && st.Leader == m.member.Self() && !m.member.MayLead() {
		st.Leader = metadata.NoLeader
	}
	return st, ok
}

// Leads returns nil if this broker leads p, else an error wrapping
// ErrNotLeader: a partition offline, led by another broker, this broker
// not yet registered, or one the image lacks (a broker still replaying
// the metadata log after a restart has its log dir's topics before the
// image does; NOT_LEADER_OR_FOLLOWER makes clients look again).
func (m *Manager) Leads(p *storage.Partition) error {
	st, ok := m.State(p)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s-%d is not in the metadata log here", ErrNotLeader, p.Topic().Name, p.Index())
	case st.Leader != m.member.Self():
		return fmt.Errorf("%w: %s-%d is led by broker %d", ErrNotLeader, p.Topic().Name, p.Index(), st.Leader)
	}
	return nil
}

// LeadsAt reports whether this broker still leads p at leader epoch
// epoch: a produce, a fetch or a coordinator's append that started under
// it may go on.
func (m *Manager) LeadsAt(p *storage.Partition, epoch int32) bool {
	st, ok := m.State(p)
	return ok && st.Leader == m.member.Self() && st.LeaderEpoch == epoch
}

// notLeadingCode is the error of a request waiting on p that this broker
// no longer leads at the epoch it began under: UNKNOWN_TOPIC_OR_PARTITION
// (UNKNOWN_TOPIC_ID byID) if the topic was deleted, else
// NOT_LEADER_OR_FOLLOWER.
func (m *Manager) notLeadingCode(p *storage.Partition, byID bool) int16 {
	if _, ok := m.partitionState(p); !ok || p.Deleted() {
		return PartitionErrorCode(storage.ErrDeleted, byID)
	}
	return kerr.NotLeaderForPartition.Code
}

// sessionChanged is cluster.Member's OnSessionChange hook: this broker's
// session ran out or came back, so it stopped or resumed leading what the
// image gives it, though the image did not change. What waits on those
// partitions is checked again: a produce waiting on a broker that may no
// longer lead is answered NOT_LEADER_OR_FOLLOWER.
func (m *Manager) sessionChanged() {
	store := m.store
	for _, c := range ledBy(m.member.Image(), m.member.Self()) {
		t, err := store.TopicByID(storage.TopicID(c.Topic))
		if err != nil {
			continue
		}
		if p, err := t.Partition(c.Index); err == nil {
			m.leaders.AfterAppend(p)
			m.Wake(p)
		}
	}
}

// isReplica reports whether replica holds a replica of p.
func (m *Manager) isReplica(p *storage.Partition, replica int32) bool {
	st, _ := m.partitionState(p)
	return slices.Contains(st.Replicas, replica)
}
