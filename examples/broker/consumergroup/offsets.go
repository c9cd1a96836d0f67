package consumergroup

import "github.com/twmb/franz-go/pkg/kerr"

// A consumer group's committed offsets are the classic coordinator's
// (package group): the server asks this coordinator only whether a
// commit or a fetch by a member is taken, then hands it over as a
// commit outside any generation.
//
// A commit carries the member epoch the client knew. At the member's
// current epoch it is taken whole. At an older epoch it is taken for each
// partition the member held since that epoch or before (its assignment
// epoch, KIP-1251, Kafka 4.3), and refused STALE_MEMBER_EPOCH for the
// others: a client that commits what it consumed while its next
// heartbeat's answer is on its way is not refused for partitions it has
// not lost. A newer epoch than the member's is refused whole. A fetch
// must be at the current epoch.

// PartitionCheck says whether a commit is taken for one partition: nil,
// or its error.
type PartitionCheck func(topic string, partition int32) *kerr.Error

// ValidateCommit checks an offset commit to group by memberID at
// memberEpoch (Kafka's ConsumerGroup.validateOffsetCommit): a commit with
// a negative epoch is a simple consumer's or the admin's, taken while the
// group has no member; else the member must exist (UNKNOWN_MEMBER_ID),
// and its epoch be its current one, or an older one for the partitions it
// held then, which check says one by one (nil: every partition is
// taken). ok is false if group is not a consumer group here: the classic
// coordinator checks it. O(the member's partitions) for an older epoch,
// O(1) otherwise.
func (c *Coordinator) ValidateCommit(group, memberID string, memberEpoch int32) (ok bool, err *kerr.Error, check PartitionCheck) {
	return c.validateOffsets(group, memberID, memberEpoch, true, func(members int) bool { return memberEpoch < 0 && members == 0 })
}

// ValidateTxnCommit checks a transactional offset commit (TxnOffsetCommit)
// as ValidateCommit does, but one that names no member, no instance and
// no epoch is taken whatever the members: before v3 it cannot name them.
func (c *Coordinator) ValidateTxnCommit(group, memberID, instanceID string, memberEpoch int32) (ok bool, err *kerr.Error, check PartitionCheck) {
	return c.validateOffsets(group, memberID, memberEpoch, true, func(members int) bool {
		return memberEpoch < 0 && members == 0 || memberEpoch == -1 && memberID == "" && instanceID == ""
	})
}

// ValidateFetch checks an offset fetch that names a member (OffsetFetch
// v9+, Kafka's validateOffsetFetch): without a member id and with a
// negative epoch it is the admin's, always taken; else the member must be
// at its current epoch.
func (c *Coordinator) ValidateFetch(group, memberID string, memberEpoch int32) (ok bool, err *kerr.Error) {
	ok, err, _ = c.validateOffsets(group, memberID, memberEpoch, false, func(int) bool { return memberID == "" && memberEpoch < 0 })
	return ok, err
}

// validateOffsets checks memberID at memberEpoch in group, unless
// anonymous (given the group's member count) says the request needs no
// member; an older epoch is checked partition by partition if
// byPartition.
func (c *Coordinator) validateOffsets(group, memberID string, memberEpoch int32, byPartition bool,
	anonymous func(members int) bool) (bool, *kerr.Error, PartitionCheck) {
	g := c.lookup(group, false)
	if g == nil {
		return false, nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return false, nil, nil
	}
	if anonymous(len(g.members)) {
		return true, nil, nil
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return true, kerr.UnknownMemberID, nil
	case m.epoch == memberEpoch:
		return true, nil, nil
	case m.classic != nil:
		// A classic member commits at its generation, its epoch: any
		// other is the classic protocol's ILLEGAL_GENERATION (Kafka's
		// validateOffsetCommit for a member of the classic protocol).
		return true, kerr.IllegalGeneration, nil
	case memberEpoch > m.epoch || !byPartition:
		return true, kerr.StaleMemberEpoch, nil
	}
	// The check runs after the group's mutex is released: it reads a
	// copy of the assignment epochs, and the topics as they are now.
	since := make(map[TopicID]map[int32]int32, len(m.since))
	for id, ps := range m.since {
		cp := make(map[int32]int32, len(ps))
		for p, e := range ps {
			cp[p] = e
		}
		since[id] = cp
	}
	ts := c.cfg.topics()
	return true, nil, func(topic string, partition int32) *kerr.Error {
		t, ok := ts.Topic(topic)
		if !ok {
			return kerr.StaleMemberEpoch
		}
		if e, held := since[t.ID][partition]; held && e <= memberEpoch {
			return nil
		}
		return kerr.StaleMemberEpoch
	}
}
