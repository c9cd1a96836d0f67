package server

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// groupStore is the group coordinator's OffsetStore: each change of a group
// is a batch of __consumer_offsets' own records (package records) appended
// to the group's offsets partition through the leader's ordinary append,
// and replicated to its followers like any partition's. Whether the log is
// in memory or in log.dirs is the partition's: the store has no file of
// its own.
//
// A commit waits, as Kafka's GroupMetadataManager appends it with acks=-1,
// in the Produce purgatory under its partition (delayedCommit) until the
// high watermark passes it: answered then; REQUEST_TIMED_OUT after
// offsets.commit.timeout.ms; NOT_COORDINATOR at once if this broker stops
// leading the partition meanwhile (the records may survive on the new
// leader, or be truncated: the client retries there, as after any
// NOT_COORDINATOR). Deletions and expiries are tombstones, appended
// without a wait, as Kafka appends them; the followers take them at their
// next fetch.
//
// The coordinator calls the store with a group's mutex held: the append
// (into the page cache, quick) happens there, so that the log has the
// group's changes in the order they happened; the wait is submitted by
// the Pending the coordinator calls once the mutex is released, since
// waking the purgatory may complete a commit, whose answer takes the
// group's mutex.
//
// Appends go through the partition's compaction (offsets_compaction.go),
// which follows them and rewrites the live records once the dead ones
// call for it: the partition's size stays bounded.
type groupStore struct{ s *Server }

// errCoordinatorMoved is wrapped when the group's offsets partition is not
// led here (any more): NOT_COORDINATOR.
var errCoordinatorMoved = kerr.NotCoordinator

// append appends recs to group's offsets partition, and returns it, the
// leader epoch appended under and the offset after the batch. With
// minISR, a partition whose ISR is below its min.insync.replicas is
// refused, COORDINATOR_NOT_AVAILABLE.
func (gs groupStore) append(group string, recs []kmsg.Record, minISR bool) (*storage.Partition, int32, int64, error) {
	s := gs.s
	t, err := s.image().Topic(offsetsTopic)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %s does not exist", errCoordinatorMoved, offsetsTopic)
	}
	idx := partitionFor(group, len(t.Partitions))
	p, err := s.replicas.Store().Partition(offsetsTopic, idx)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %v", errCoordinatorMoved, err)
	}
	st, _ := s.replicas.State(p)
	if st.Leader != s.brokers.Self() {
		return nil, 0, 0, fmt.Errorf("%w: %s-%d is not led here", errCoordinatorMoved, offsetsTopic, idx)
	}
	if ok, n := s.replicas.EnoughReplicas(p); minISR && !ok {
		return nil, 0, 0, fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d",
			kerr.CoordinatorNotAvailable, offsetsTopic, idx, n, p.Topic().Config.MinISR())
	}
	res, rw, err := s.compactor.append(p, st.LeaderEpoch, records.Batch(time.Now(), recs))
	if err != nil {
		s.log.Warn("appending to the offsets topic", zap.String("group", group), zap.Error(err))
		return nil, 0, 0, fmt.Errorf("%w: %v", errCoordinatorMoved, err)
	}
	if rw != nil {
		rw.submit()
	}
	return p, st.LeaderEpoch, res.LastOffset + 1, nil
}

// Commit appends the offsets, after the group's metadata record when the
// coordinator gives its protocol type (no metadata of the group is stored
// yet), and returns the wait for their replication. A partition whose ISR
// is below its min.insync.replicas refuses the commit before appending it,
// COORDINATOR_NOT_AVAILABLE, as Kafka maps the NOT_ENOUGH_REPLICAS of its
// acks=-1 append for a commit.
func (gs groupStore) Commit(g, protocolType string, offsets []group.StoredOffset) (group.Pending, error) {
	recs := make([]kmsg.Record, 0, len(offsets)+1)
	if protocolType != "" {
		recs = append(recs, records.Group(group.StoredGroup{Group: g, ProtocolType: protocolType}))
	}
	for _, o := range offsets {
		recs = append(recs, records.Offset(g, o))
	}
	p, epoch, required, err := gs.append(g, recs, true)
	if err != nil {
		return nil, err
	}
	return gs.replicated(p, epoch, required), nil
}

// Group appends the group's metadata record (Kafka's storeGroup: its
// generation, members and assignments) and returns the wait for its
// replication, as a commit's: acks=-1, refused below min.insync.replicas.
func (gs groupStore) Group(sg group.StoredGroup) (group.Pending, error) {
	p, epoch, required, err := gs.append(sg.Group, []kmsg.Record{records.Group(sg)}, true)
	if err != nil {
		return nil, err
	}
	return gs.replicated(p, epoch, required), nil
}

// replicated is the wait for p's high watermark to reach required, the
// offset after a batch appended at leader epoch epoch: a delayedCommit in
// the Produce purgatory.
func (gs groupStore) replicated(p *storage.Partition, epoch int32, required int64) group.Pending {
	s := gs.s
	return func(done func(error)) {
		s.replicas.AfterAppend(p) // a leader alone in its ISR moves the high watermark now
		s.replicas.Wake(p)        // followers waiting for data fetch it
		op := &delayedCommit{s: s, p: p, epoch: epoch, required: required, done: done}
		if err := s.replicas.WatchHighWatermark(op, s.cfg.OffsetsCommitTimeout, p); err != nil {
			done(fmt.Errorf("%w: %v", errCoordinatorMoved, err)) // closing
		}
	}
}

// Delete appends tombstones of group's offsets of tps.
func (gs groupStore) Delete(g string, tps []group.TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	recs := make([]kmsg.Record, len(tps))
	for i, tp := range tps {
		recs[i] = records.OffsetTombstone(g, tp)
	}
	_, _, _, err := gs.append(g, recs, false)
	return err
}

// DeleteGroup appends tombstones of group's offsets of tps and of its
// metadata, as Kafka's cleanupGroupMetadata does.
func (gs groupStore) DeleteGroup(g string, tps []group.TopicPartition) error {
	recs := make([]kmsg.Record, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, records.OffsetTombstone(g, tp))
	}
	recs = append(recs, records.GroupTombstone(g))
	_, _, _, err := gs.append(g, recs, false)
	return err
}

// delayedCommit is an offset commit waiting for the high watermark of its
// offsets partition to pass its batch (Kafka's DelayedProduce of a
// coordinator append with acks=-1), in the Produce purgatory.
type delayedCommit struct {
	operation.State
	s        *Server
	p        *storage.Partition
	epoch    int32 // the leader epoch it was appended under
	required int64 // the high watermark it waits for
	done     func(error)
}

func (d *delayedCommit) TryComplete() bool {
	o, err := d.p.Offsets()
	return err != nil || o.HighWatermark >= d.required || !d.s.replicas.LeadsAt(d.p, d.epoch)
}

// OnComplete answers: replicated, nil, unless the ISR fell below
// min.insync.replicas meanwhile (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// which it answers a commit COORDINATOR_NOT_AVAILABLE); leadership moved
// or the partition deleted, NOT_COORDINATOR; at the deadline,
// REQUEST_TIMED_OUT; cut short by the broker closing, NOT_COORDINATOR.
func (d *delayedCommit) OnComplete() {
	o, err := d.p.Offsets()
	switch {
	case err != nil, !d.s.replicas.LeadsAt(d.p, d.epoch):
		d.done(errCoordinatorMoved)
	case o.HighWatermark >= d.required:
		if ok, _ := d.s.replicas.EnoughReplicas(d.p); !ok {
			d.done(kerr.CoordinatorNotAvailable)
			return
		}
		d.done(nil)
	case d.Outcome() == operation.Expired:
		d.done(kerr.RequestTimedOut)
	default:
		d.done(errCoordinatorMoved)
	}
}

func (d *delayedCommit) OnExpiration() {}
