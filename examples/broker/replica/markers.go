package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// Transaction markers (Kafka's WriteTxnMarkers path of its ReplicaManager):
// the transaction coordinator ends a producer's transaction in each of its
// partitions by appending a commit or abort marker there, a control batch
// written by the partition's leader with acks=-1. AppendMarker appends it
// as an acks=all produce appends a batch; AwaitAll waits in the Produce
// purgatory, under every partition appended to, until each high watermark
// passes its marker. The last stable offset moves with the marker (at once
// past an aborted or committed transaction's batches, once the marker is
// below the high watermark), and the read_committed fetches waiting on the
// partition are checked again by the Wake that follows the append and the
// high watermark's moves.

// AppendMarker appends mk to p, as its leader, if its ISR holds
// min.insync.replicas (markers are written with acks=-1), moves the high
// watermark of a leader alone in its ISR and wakes what waits on p. It
// returns the wait for the marker's replication. Its errors are Append's
// and the storage's refusal of the marker (a stale producer epoch,
// ErrInvalidProducerEpoch; a fenced coordinator, ErrCoordinatorFenced).
func (m *Manager) AppendMarker(p *storage.Partition, mk storage.Marker) (ProduceWait, error) {
	if err := m.Leads(p); err != nil {
		return ProduceWait{}, err
	}
	state, _ := m.partitionState(p)
	if ok, n := m.leaders.EnoughReplicas(p); !ok {
		return ProduceWait{}, fmt.Errorf("%w: %s-%d has %d, min.insync.replicas is %d",
			ErrNotEnoughReplicas, p.Topic().Name, p.Index(), n, p.Topic().Config().MinISR())
	}
	res, err := p.AppendMarker(mk)
	if err != nil {
		return ProduceWait{}, err
	}
	m.leaders.AfterAppend(p)
	m.Wake(p)
	return ProduceWait{Partition: p, Epoch: state.LeaderEpoch, Required: res.LastOffset + 1}, nil
}

// ErrNotEnoughReplicasAfterAppend is a wait's outcome when its batch is
// below the high watermark but the ISR shrank below min.insync.replicas
// meanwhile (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND).
var ErrNotEnoughReplicasAfterAppend = kerr.NotEnoughReplicasAfterAppend

// AwaitAll calls done, exactly once, with each wait's outcome, in order,
// once every one is settled, at timeout, or when ctx ends: nil for a batch
// replicated with enough in-sync replicas; ErrNotEnoughReplicasAfterAppend;
// storage.ErrDeleted; ErrNotLeader when leadership moved (the batch may be
// lost: write it again at the new leader); a timeout or ctx's end,
// REQUEST_TIMED_OUT. done runs on the goroutine that completes the wait,
// or on the caller's if the purgatory is closed.
func (m *Manager) AwaitAll(ctx context.Context, waits []ProduceWait, timeout time.Duration, done func([]error)) {
	op := &delayedAll{m: m, waits: waits, done: done}
	if len(waits) == 0 {
		op.OnComplete()
		return
	}
	keys := make([]TP, len(waits))
	for i, w := range waits {
		keys[i] = keyOf(w.Partition)
	}
	if _, err := m.produces.TryCompleteElseWatchContext(ctx, op, timeout, keys...); err != nil {
		op.OnComplete()
	}
}

// delayedAll is AwaitAll's wait in the Produce purgatory.
type delayedAll struct {
	operation.State
	m     *Manager
	waits []ProduceWait
	done  func([]error)
}

func (d *delayedAll) TryComplete() bool {
	for _, w := range d.waits {
		if !w.settled(d.m) {
			return false
		}
	}
	return true
}

// OnComplete decides each wait's outcome from its partition's state now
// (waitState), as delayedProduce's OnComplete does.
func (d *delayedAll) OnComplete() {
	errs := make([]error, len(d.waits))
	for i, w := range d.waits {
		switch st, err := d.m.waitState(w); st {
		case waitFailed:
			errs[i] = err
		case waitMoved:
			errs[i] = fmt.Errorf("%w: %s-%d", ErrNotLeader, w.Partition.Topic().Name, w.Partition.Index())
		case waitShortISR:
			errs[i] = ErrNotEnoughReplicasAfterAppend
		case waitPending:
			errs[i] = kerr.RequestTimedOut
		}
	}
	d.done(errs)
}

func (d *delayedAll) OnExpiration() {}

// kafkaCode returns the code of a *kerr.Error err wraps.
func kafkaCode(err error) (int16, bool) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code, true
	}
	return 0, false
}
