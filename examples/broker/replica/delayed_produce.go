package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// delayedProduce is an acks=all produce waiting until every in-sync replica
// has its batches (Kafka's DelayedProduce): it completes when the high
// watermark of each partition it appended to has passed its batch, or a
// partition was deleted, or this broker stopped leading one (a new leader
// epoch: answered at once with NOT_LEADER_OR_FOLLOWER, as Kafka's
// DelayedProduce does when leadership moves), or at its timeout.
//
// TryComplete only reads; OnComplete decides each partition's answer from
// the partitions' state then, so nothing is written that TryComplete on
// another goroutine could be reading.
type delayedProduce struct {
	operation.State
	m     *Manager
	r     Responder
	resp  *kmsg.ProduceResponse // the appends' results; OnComplete adds the waits' outcome
	waits []ProduceWait
}

// ProduceWait is one partition an acks=all produce waits on (Append
// returns it): its batch, appended under a leader epoch, and where the
// partition's result sits in the produce's response.
type ProduceWait struct {
	Partition *storage.Partition
	Epoch     int32 // the leader epoch it was appended under
	Required  int64 // the offset after the batch: the high watermark it waits for
	// TopicIndex and PartitionIndex place its result in the response:
	// Topics[TopicIndex].Partitions[PartitionIndex].
	TopicIndex, PartitionIndex int
}

// partition returns the partition w waits on.
func (w ProduceWait) partition() *storage.Partition { return w.Partition }

// settled reports whether w needs no more waiting: its batch is below the
// high watermark, its partition is gone, or this broker no longer leads it
// at the epoch it was appended under.
func (w ProduceWait) settled(m *Manager) bool {
	o, err := w.Partition.Offsets()
	return err != nil || o.HighWatermark >= w.Required || !m.LeadsAt(w.Partition, w.Epoch)
}

// Append appends batch, a produce's, to p if this broker leads it (and,
// with acksAll, if its ISR holds min.insync.replicas), moves the high
// watermark of a leader alone in its ISR and wakes what waits on p. It
// returns the append's result and the wait an acks=all produce makes for
// it (its indexes in the response left to the caller). An error is the
// partition's: not led here (ErrNotLeader), too few in-sync replicas
// (ErrNotEnoughReplicas), or the storage's refusal of the batch.
func (m *Manager) Append(p *storage.Partition, batch []byte, acksAll bool) (storage.AppendResult, ProduceWait, error) {
	return m.AppendVerified(p, batch, acksAll, 0)
}

// AppendVerified is Append for a batch whose transaction's coordinator
// confirmed the partition under guard (storage.Partition.AppendVerified;
// 0: no check was asked).
func (m *Manager) AppendVerified(p *storage.Partition, batch []byte, acksAll bool, guard uint64) (storage.AppendResult, ProduceWait, error) {
	if err := m.Leads(p); err != nil {
		return storage.AppendResult{}, ProduceWait{}, err
	}
	state, _ := m.partitionState(p) // the leader epoch the produce waits under
	if acksAll {
		if ok, n := m.leaders.EnoughReplicas(p); !ok {
			return storage.AppendResult{}, ProduceWait{}, fmt.Errorf("%w: %s-%d has %d, min.insync.replicas is %d",
				ErrNotEnoughReplicas, p.Topic().Name, p.Index(), n, p.Topic().Config().MinISR())
		}
	}
	res, err := p.AppendVerified(batch, guard)
	if err != nil {
		return res, ProduceWait{}, err
	}
	if !res.Duplicate {
		m.leaders.AfterAppend(p) // a leader alone in its ISR moves the high watermark now
		m.Wake(p)
	}
	return res, ProduceWait{Partition: p, Epoch: state.LeaderEpoch, Required: res.LastOffset + 1}, nil
}

// AwaitReplication answers r with resp once every partition in waits has
// its batch below its high watermark, or at timeout (Kafka's
// DelayedProduce, in the Produce purgatory, tied to r's connection).
func (m *Manager) AwaitReplication(r Responder, resp *kmsg.ProduceResponse, waits []ProduceWait, timeout time.Duration) {
	op := &delayedProduce{m: m, r: r, resp: resp, waits: waits}
	watch(m, m.produces, r, op, timeout, waits)
}

func (d *delayedProduce) TryComplete() bool { return allSettled(d.m, d.waits) }

// OnComplete answers each partition from its state now: led by another
// broker or at another epoch, NOT_LEADER_OR_FOLLOWER; replicated, NONE,
// unless the ISR has shrunk below min.insync.replicas meanwhile,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (Kafka's checkEnoughReplicasReachOffset);
// deleted, UNKNOWN_TOPIC_OR_PARTITION; not yet replicated at the deadline,
// REQUEST_TIMED_OUT (the batch stays appended, as in Kafka); cut short by
// the broker closing or the client going, NOT_LEADER_OR_FOLLOWER, what a
// partition losing its leader answers, which clients retry elsewhere.
func (d *delayedProduce) OnComplete() {
	for _, w := range d.waits {
		sp := &d.resp.Topics[w.TopicIndex].Partitions[w.PartitionIndex]
		st, err := d.m.waitState(w)
		switch st {
		case waitDone:
			continue
		case waitFailed:
			sp.ErrorCode = ErrorCode(err)
			if errors.Is(err, storage.ErrDeleted) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		case waitMoved:
			// Leadership moved: the new leader may not hold the batch,
			// and the client retries there (idempotent producers are
			// deduplicated).
			sp.ErrorCode = d.m.notLeadingCode(w.Partition, false)
		case waitShortISR:
			sp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
		case waitPending:
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
			if d.Outcome() == operation.Expired {
				sp.ErrorCode = kerr.RequestTimedOut.Code
			}
		}
		sp.BaseOffset = -1
		sp.ErrorMessage = ErrorMessage(err)
	}
	d.r.Respond(d.resp)
}

// waitState is what became of a wait's batch, judged from its partition
// now.
type waitState int

const (
	waitDone     waitState = iota // below the high watermark, with enough in-sync replicas
	waitFailed                    // the partition cannot be read (deleted): its error
	waitMoved                     // this broker no longer leads it at the wait's epoch
	waitShortISR                  // replicated, but the ISR fell below min.insync.replicas meanwhile
	waitPending                   // not yet replicated
)

// waitState judges w from its partition's state now, as an acks=all
// produce and a marker's wait are answered (Kafka's
// checkEnoughReplicasReachOffset); err is the partition's, for
// waitFailed.
func (m *Manager) waitState(w ProduceWait) (waitState, error) {
	o, err := w.Partition.Offsets()
	switch {
	case err != nil:
		return waitFailed, err
	case !m.LeadsAt(w.Partition, w.Epoch):
		return waitMoved, nil
	case o.HighWatermark >= w.Required:
		if ok, _ := m.leaders.EnoughReplicas(w.Partition); !ok {
			return waitShortISR, nil
		}
		return waitDone, nil
	default:
		return waitPending, nil
	}
}

func (d *delayedProduce) OnExpiration() {}

// millis converts a request's millisecond timeout.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
