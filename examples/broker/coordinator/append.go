package coordinator

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// A shard's changes are batches of its topic's own records, appended to
// the key's partition through the leader's ordinary append and replicated
// to its followers like any partition's. Whether the log is in memory or
// in log.dirs is the partition's: the runtime has no file of its own.
//
// An append that must be durable (a commit, a group's metadata) waits, as
// Kafka's coordinators append with acks=-1, in the Produce purgatory under
// its partition (delayedAppend) until the high watermark passes it:
// answered then; REQUEST_TIMED_OUT after TopicSpec.AppendTimeout;
// NOT_COORDINATOR at once if this broker stops leading the partition
// meanwhile (the records may survive on the new leader, or be truncated:
// the client retries there, as after any NOT_COORDINATOR). One that need
// not be (a tombstone: Kafka appends deletions and expiries without a
// wait) is only appended; the followers take it at their next fetch.
//
// The shard appends with its own lock held (a group's mutex): the append
// (into the page cache, quick) happens there, so that the log has the
// key's changes in the order they happened; the wait is submitted by the
// function Append returns, which the shard calls once its lock is
// released, since waking the purgatory may complete an append whose
// answer takes that lock.
//
// Appends go through the partition's compaction (compaction.go), which
// follows them and rewrites the live records once the dead ones call for
// it: the partition's size stays bounded.

// errCoordinatorMoved is wrapped when the key's partition is not led here
// (any more): NOT_COORDINATOR.
var errCoordinatorMoved = kerr.NotCoordinator

// Append appends batch, records of the topic's, to key's partition, and
// returns the wait for its replication: a function that submits it to the
// Produce purgatory and calls done once the high watermark passes the
// batch (nil), or with why not (NOT_COORDINATOR, REQUEST_TIMED_OUT,
// COORDINATOR_NOT_AVAILABLE when the ISR fell below min.insync.replicas
// meanwhile). A caller that needs no wait drops it. With minISR, a
// partition whose ISR is below its min.insync.replicas is refused before
// anything is appended, COORDINATOR_NOT_AVAILABLE, as Kafka maps the
// NOT_ENOUGH_REPLICAS of its acks=-1 append for a commit. A partition not
// led here is NOT_COORDINATOR.
func (t *Topic) Append(key string, batch []byte, minISR bool) (wait func(done func(error)), err error) {
	rm, name := t.rt.rm, t.spec.Name
	mt, err := t.rt.member.Image().Topic(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist", errCoordinatorMoved, name)
	}
	idx := PartitionFor(key, len(mt.Partitions))
	p, err := rm.Store().Partition(name, idx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCoordinatorMoved, err)
	}
	st, _ := rm.State(p)
	if st.Leader != t.rt.member.Self() {
		return nil, fmt.Errorf("%w: %s-%d is not led here", errCoordinatorMoved, name, idx)
	}
	if ok, n := rm.EnoughReplicas(p); minISR && !ok {
		return nil, fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d",
			kerr.CoordinatorNotAvailable, name, idx, n, p.Topic().Config().MinISR())
	}
	res, rw, err := t.compactedAppend(p, st.LeaderEpoch, batch)
	if errors.Is(err, storage.ErrBatchTooLarge) {
		// The change itself is too large: its coordinator is here, and
		// a retry would fail alike (Kafka's append: MESSAGE_TOO_LARGE,
		// which each coordinator maps for its client).
		return nil, fmt.Errorf("%w: %v", kerr.MessageTooLarge, err)
	}
	if errors.Is(err, storage.ErrInvalidProducerEpoch) {
		// A transactional offset commit from a producer fenced since:
		// its coordinator is here, and the producer must learn it is a
		// zombie (Kafka's append answers INVALID_PRODUCER_EPOCH), not
		// look the coordinator up again.
		return nil, fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	}
	if err != nil {
		t.rt.log.Warn("appending to a state topic", zap.String("topic", name), zap.String("key", key), zap.Error(err))
		return nil, fmt.Errorf("%w: %v", errCoordinatorMoved, err)
	}
	if rw != nil {
		rw.submit()
	}
	return t.replicated(p, st.LeaderEpoch, res.LastOffset+1), nil
}

// replicated is the wait for p's high watermark to reach required, the
// offset after a batch appended at leader epoch epoch: a delayedAppend in
// the Produce purgatory.
func (t *Topic) replicated(p *storage.Partition, epoch int32, required int64) func(done func(error)) {
	rm := t.rt.rm
	return func(done func(error)) {
		rm.AfterAppend(p) // a leader alone in its ISR moves the high watermark now
		rm.Wake(p)        // followers waiting for data fetch it
		op := &delayedAppend{t: t, p: p, epoch: epoch, required: required, done: done}
		if err := rm.WatchHighWatermark(op, t.spec.AppendTimeout, p); err != nil {
			done(fmt.Errorf("%w: %v", errCoordinatorMoved, err)) // closing
		}
	}
}

// delayedAppend is a shard's append (a group's offset commit) waiting for
// the high watermark of its partition to pass its batch (Kafka's
// DelayedProduce of a coordinator append with acks=-1), in the Produce
// purgatory.
type delayedAppend struct {
	operation.State
	t        *Topic
	p        *storage.Partition
	epoch    int32 // the leader epoch it was appended under
	required int64 // the high watermark it waits for
	done     func(error)
}

func (d *delayedAppend) TryComplete() bool {
	o, err := d.p.Offsets()
	return err != nil || o.HighWatermark >= d.required || !d.t.rt.rm.LeadsAt(d.p, d.epoch)
}

// OnComplete answers: replicated, nil, unless the ISR fell below
// min.insync.replicas meanwhile (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND,
// which it answers a commit COORDINATOR_NOT_AVAILABLE); leadership moved
// or the partition deleted, NOT_COORDINATOR; at the deadline,
// REQUEST_TIMED_OUT; cut short by the broker closing, NOT_COORDINATOR.
func (d *delayedAppend) OnComplete() {
	rm := d.t.rt.rm
	o, err := d.p.Offsets()
	switch {
	case err != nil, !rm.LeadsAt(d.p, d.epoch):
		d.done(errCoordinatorMoved)
	case o.HighWatermark >= d.required:
		if ok, _ := rm.EnoughReplicas(d.p); !ok {
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

func (d *delayedAppend) OnExpiration() {}
