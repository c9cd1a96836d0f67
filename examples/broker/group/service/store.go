package service

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
)

// store is the group coordinator's OffsetStore: each change of a group is
// a batch of __consumer_offsets' own records (package records) appended to
// the group's partition through the runtime (coordinator.Topic.Append). A
// commit and a group's metadata wait, as Kafka's GroupMetadataManager
// appends them with acks=-1, until the high watermark passes them
// (Pending); deletions and expiries are tombstones, appended without a
// wait, as Kafka appends them. A transaction's offsets are a
// transactional batch of its producer (TxnCommit), which waits as a
// commit does. The coordinator calls the store with a group's mutex
// held, and the Pending once it is released.
type store struct{ t *coordinator.Topic }

var _ group.OffsetStore = store{}

// append appends recs to group's partition and returns the wait for their
// replication. With minISR, a partition whose ISR is below its
// min.insync.replicas is refused, COORDINATOR_NOT_AVAILABLE.
func (s store) append(g string, recs []kmsg.Record, minISR bool) (group.Pending, error) {
	return s.appendBatch(g, records.Batch(time.Now(), recs), minISR)
}

// appendBatch appends batch to group's partition, as append does.
func (s store) appendBatch(g string, batch []byte, minISR bool) (group.Pending, error) {
	wait, err := s.t.Append(g, batch, minISR)
	if err != nil {
		return nil, err
	}
	return group.Pending(wait), nil
}

// Commit appends the offsets, after the group's metadata record when the
// coordinator gives its protocol type (no metadata of the group is stored
// yet), and returns the wait for their replication. A partition whose ISR
// is below its min.insync.replicas refuses the commit before appending it,
// COORDINATOR_NOT_AVAILABLE, as Kafka maps the NOT_ENOUGH_REPLICAS of its
// acks=-1 append for a commit.
func (s store) Commit(g, protocolType string, offsets []group.StoredOffset) (group.Pending, error) {
	recs := make([]kmsg.Record, 0, len(offsets)+1)
	if protocolType != "" {
		recs = append(recs, records.Group(group.StoredGroup{Group: g, ProtocolType: protocolType}))
	}
	for _, o := range offsets {
		recs = append(recs, records.Offset(g, o))
	}
	return s.append(g, recs, true)
}

// TxnCommit appends the offsets as one transactional batch of the
// producer (records.TxnBatch), as Kafka's storeOffsets writes a
// TxnOffsetCommit, and returns the wait for its replication, as a
// commit's: acks=-1, refused below min.insync.replicas. The runtime
// appends it as a coordinator's (storage's AppendCoordinator: a
// transactional batch without a sequence, its producer's epoch fenced),
// and its compaction waits while the transaction is open: a rewrite would
// place the committed offsets after the pending ones, which would then
// lose to them.
func (s store) TxnCommit(g string, producerID int64, producerEpoch int16, offsets []group.StoredOffset) (group.Pending, error) {
	recs := make([]kmsg.Record, len(offsets))
	for i, o := range offsets {
		recs[i] = records.Offset(g, o)
	}
	return s.appendBatch(g, records.TxnBatch(time.Now(), producerID, producerEpoch, recs), true)
}

// Group appends the group's metadata record (Kafka's storeGroup: its
// generation, members and assignments) and returns the wait for its
// replication, as a commit's: acks=-1, refused below min.insync.replicas.
func (s store) Group(sg group.StoredGroup) (group.Pending, error) {
	return s.append(sg.Group, []kmsg.Record{records.Group(sg)}, true)
}

// Delete appends tombstones of group's offsets of tps.
func (s store) Delete(g string, tps []group.TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	recs := make([]kmsg.Record, len(tps))
	for i, tp := range tps {
		recs[i] = records.OffsetTombstone(g, tp)
	}
	_, err := s.append(g, recs, false)
	return err
}

// DeleteGroup appends tombstones of group's offsets of tps and of its
// metadata, as Kafka's cleanupGroupMetadata does.
func (s store) DeleteGroup(g string, tps []group.TopicPartition) error {
	recs := make([]kmsg.Record, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, records.OffsetTombstone(g, tp))
	}
	recs = append(recs, records.GroupTombstone(g))
	_, err := s.append(g, recs, false)
	return err
}
