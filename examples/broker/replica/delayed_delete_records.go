package replica

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// deleteToHighWatermark is the offset a DeleteRecords request names
// to delete every record below the high watermark.
const deleteToHighWatermark = -1

// DeleteRecordsPart is one partition of a DeleteRecords request (the
// handler resolves the partitions and answers those it cannot: unknown,
// unauthorized): the offset before which its records go, and where its
// answer sits in the response.
type DeleteRecordsPart struct {
	Partition *storage.Partition
	Offset    int64 // the new log start; -1 for the high watermark
	// TopicIndex and PartitionIndex place its result in the response:
	// Topics[TopicIndex].Partitions[PartitionIndex].
	TopicIndex, PartitionIndex int
}

// deleteWait is a part the leader deleted from, waiting for its low
// watermark: the offset it waits for, under the leader epoch it deleted
// at.
type deleteWait struct {
	DeleteRecordsPart
	epoch    int32
	required int64
}

// delayedDeleteRecords is a DeleteRecords request waiting until every
// replica alive has dropped the records (Kafka's DelayedDeleteRecords):
// it completes when the low watermark of each partition it deleted from
// has reached the offset asked, or this broker no longer leads one at the
// epoch it deleted at, or one was deleted, or at its timeout.
//
// TryComplete only reads; OnComplete writes each waiting partition's
// answer from its state then, as delayedProduce does.
//
// A replica's broker fenced while it is in the ISR leaves the ISR in the
// same record, which wakes the wait (Apply); one fenced while already out
// of the ISR changes no partition, and the wait sees it at the next
// follower fetch that raises a log start, or times out, as Kafka's
// purgatory is not checked on a broker's fencing either.
type delayedDeleteRecords struct {
	operation.State
	m     *Manager
	r     Responder
	resp  *kmsg.DeleteRecordsResponse // the answers known at once; OnComplete adds the waits'
	waits []deleteWait
}

// DeleteRecords deletes, on each partition this broker leads, the records
// before the offset asked (storage.Partition.DeleteRecords: the log
// start becomes that offset; -1 the high watermark), then answers r with
// resp once each partition's low watermark (Leaders.LowWatermark) has
// reached its offset, or at timeout (Kafka's ReplicaManager.deleteRecords
// and DelayedDeleteRecords, in the DeleteRecords purgatory, tied to r's
// connection). A partition not led here is NOT_LEADER_OR_FOLLOWER, an
// offset past the high watermark or negative OFFSET_OUT_OF_RANGE, each
// answered with low watermark -1; the others with their low watermark.
// Without followers the low watermark is the log start, and the answer
// is immediate. It does not block.
func (m *Manager) DeleteRecords(r Responder, resp *kmsg.DeleteRecordsResponse, parts []DeleteRecordsPart, timeout time.Duration) {
	op := &delayedDeleteRecords{m: m, r: r, resp: resp}
	for _, part := range parts {
		sp := part.result(resp)
		sp.LowWatermark = -1
		w, err := m.deleteOnLeader(part)
		if err != nil {
			sp.ErrorCode = ErrorCode(err)
			continue
		}
		op.waits = append(op.waits, w)
	}
	if len(op.waits) == 0 {
		op.OnComplete()
		return
	}
	watch(m, m.deletes, r, op, timeout, op.waits)
}

// result returns where part's answer sits in resp.
func (part DeleteRecordsPart) result(resp *kmsg.DeleteRecordsResponse) *kmsg.DeleteRecordsResponseTopicPartition {
	return &resp.Topics[part.TopicIndex].Partitions[part.PartitionIndex]
}

// deleteOnLeader moves part's log start, if this broker leads it (Kafka's
// deleteRecordsOnLeader), and returns the wait for its low watermark.
func (m *Manager) deleteOnLeader(part DeleteRecordsPart) (deleteWait, error) {
	p := part.Partition
	if err := m.Leads(p); err != nil {
		return deleteWait{}, err
	}
	st, _ := m.partitionState(p) // the leader epoch the wait is under
	offset := part.Offset
	if offset == deleteToHighWatermark {
		o, err := p.Offsets()
		if err != nil {
			return deleteWait{}, err
		}
		offset = o.HighWatermark
	}
	if _, err := p.DeleteRecords(offset); err != nil {
		return deleteWait{}, err
	}
	m.log.Info("deleted records", zap.String("topic", p.Topic().Name), zap.Int32("partition", p.Index()),
		zap.Int64("before", offset))
	return deleteWait{DeleteRecordsPart: part, epoch: st.LeaderEpoch, required: offset}, nil
}

// partition returns the partition w waits on.
func (w deleteWait) partition() *storage.Partition { return w.Partition }

// settled reports whether w needs no more waiting: its low watermark
// reached its offset, or its partition is gone or no longer led here at
// the epoch it was deleted at.
func (w deleteWait) settled(m *Manager) bool {
	if !m.LeadsAt(w.Partition, w.epoch) {
		return true
	}
	low, err := m.leaders.LowWatermark(w.Partition)
	return err != nil || low >= w.required
}

func (d *delayedDeleteRecords) TryComplete() bool { return allSettled(d.m, d.waits) }

// OnComplete answers each waiting partition from its state now: deleted,
// UNKNOWN_TOPIC_OR_PARTITION; led by another broker or at another epoch,
// NOT_LEADER_OR_FOLLOWER; its low watermark at the offset, NONE, with the
// low watermark; not yet there at the deadline, REQUEST_TIMED_OUT, with
// the low watermark now (the log start stays moved on the leader, as in
// Kafka); cut short by the broker closing or the client going,
// NOT_LEADER_OR_FOLLOWER, which clients retry.
func (d *delayedDeleteRecords) OnComplete() {
	for _, w := range d.waits {
		sp := w.result(d.resp)
		if !d.m.LeadsAt(w.Partition, w.epoch) {
			sp.ErrorCode = d.m.notLeadingCode(w.Partition, false)
			continue
		}
		low, err := d.m.leaders.LowWatermark(w.Partition)
		switch {
		case err != nil:
			sp.ErrorCode = ErrorCode(err)
		case low >= w.required:
			sp.LowWatermark = low
		case d.Outcome() == operation.Expired:
			sp.ErrorCode, sp.LowWatermark = kerr.RequestTimedOut.Code, low
		default:
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		}
	}
	d.r.Respond(d.resp)
}

func (d *delayedDeleteRecords) OnExpiration() {}
