package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
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
	s     *Server
	r     *kafkanet.Request
	resp  *kmsg.ProduceResponse // the appends' results; OnComplete adds the waits' outcome
	waits []produceWait
}

// produceWait is one partition a delayed produce waits on.
type produceWait struct {
	p                *storage.Partition
	epoch            int32 // the leader epoch it was appended under
	required         int64 // the offset after the batch: the high watermark it waits for
	topic, partition int   // where its result sits in resp
}

// settled reports whether w needs no more waiting: its batch is below the
// high watermark, its partition is gone, or this broker no longer leads it
// at the epoch it was appended under.
func (w produceWait) settled(s *Server) bool {
	o, err := w.p.Offsets()
	return err != nil || o.HighWatermark >= w.required || !s.leadsAt(w.p, w.epoch)
}

// awaitReplication answers r with resp once every partition in waits has
// its batch below its high watermark, or at timeout.
func (s *Server) awaitReplication(r *kafkanet.Request, resp *kmsg.ProduceResponse, waits []produceWait, timeout time.Duration) {
	op := &delayedProduce{s: s, r: r, resp: resp, waits: waits}
	keys := make([]tp, len(waits))
	for i, w := range waits {
		keys[i] = tp{w.p.Topic().Name, w.p.Index()}
	}
	if err := wait(r, s.produces, op, timeout, keys); err != nil {
		// Not taken (the broker is closing, or the client has gone):
		// answer from what is known now.
		r.Logger().Debug("produce not delayed", zap.Error(err))
		op.OnComplete()
	}
}

func (d *delayedProduce) TryComplete() bool {
	for _, w := range d.waits {
		if !w.settled(d.s) {
			return false
		}
	}
	return true
}

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
		sp := &d.resp.Topics[w.topic].Partitions[w.partition]
		o, err := w.p.Offsets()
		switch {
		case errors.Is(err, storage.ErrDeleted):
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case err != nil:
			sp.ErrorCode = errorCode(err)
		case !d.s.leadsAt(w.p, w.epoch):
			// Leadership moved: the new leader may not hold the batch,
			// and the client retries there (idempotent producers are
			// deduplicated).
			sp.ErrorCode = d.s.notLeadingCode(w.p, false)
		case o.HighWatermark >= w.required:
			if ok, _ := d.s.leaders.EnoughReplicas(w.p); ok {
				continue
			}
			sp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
		case d.Outcome() == operation.Expired:
			sp.ErrorCode = kerr.RequestTimedOut.Code
		default:
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		}
		sp.BaseOffset = -1
		sp.ErrorMessage = errorMessage(err)
	}
	d.r.Respond(d.resp)
}

func (d *delayedProduce) OnExpiration() {}

// millis converts a request's millisecond timeout.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
