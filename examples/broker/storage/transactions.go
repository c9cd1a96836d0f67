package storage

import "fmt"

// This file holds what the transaction coordinator and the admin APIs ask
// of a partition: writing a transaction's marker, and what its producers
// and their transactions are. The state itself is producers' (per
// producer) and txns' (the order of the transactions, the aborted index).

// Marker is a transaction marker to write (Kafka's WriteTxnMarkers entry
// for one partition): it ends producer ProducerID's transaction here with
// a commit or an abort.
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the transaction coordinator
	// writing it (the leader epoch of its __transaction_state
	// partition): a marker from an older one is fenced.
	CoordinatorEpoch int32
	Commit           bool // false: abort
}

// AppendMarker writes m's marker at the log end, as Kafka's
// appendEndTxnMarker does: a control batch built with kmsg (transactional
// and control, m's producer id and epoch, base sequence -1, one control
// record whose key is a commit or an abort and whose value names
// m.CoordinatorEpoch), timestamped now, appended as Append appends a
// batch (the leader epoch written in, the high watermark moved unless
// managed, retention applied; waking those who wait on the partition is
// the caller's). It completes the producer's transaction open here: the
// last stable offset moves past it once the high watermark passes the
// marker, and an aborted one goes into the aborted index, which
// read_committed reads return. A marker for a producer with no
// transaction open here is written all the same (Kafka writes it:
// nothing is completed).
//
// It returns an error wrapping ErrInvalidProducerEpoch for an epoch older
// than the producer's, ErrCoordinatorFenced for a coordinator epoch older
// than that of the producer's last marker, ErrDeleted, or the Log's error;
// nothing is appended then. O(1) plus the append's cost.
func (p *Partition) AppendMarker(m Marker) (AppendResult, error) {
	now := p.cfg.clock.Now()
	b, err := markerBatch(m, now)
	if err != nil {
		return AppendResult{}, fmt.Errorf("storage: build the marker of producer %d: %w", m.ProducerID, err)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return AppendResult{}, p.errDeleted()
	}
	if err := p.producers.checkMarker(m); err != nil {
		return AppendResult{}, fmt.Errorf("%s-%d: %w", p.topic.Name, p.index, err)
	}
	return p.appendLocked(b, now)
}

// ProducerState is a producer's state in a partition, as DescribeProducers
// reports it.
type ProducerState struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence of its last batch with
	// sequences in its epoch, -1 if none.
	LastSequence int32
	// LastTimestamp is the max timestamp of its last batch (a marker's
	// included), ms since the epoch.
	LastTimestamp int64
	// CoordinatorEpoch is the epoch of the coordinator that wrote its
	// last marker here, -1 if none.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its open transaction
	// here, -1 if none.
	CurrentTxnStartOffset int64
}

// Producers returns the state of every producer the partition remembers
// (those that wrote here and have not expired), by producer id, or nil
// for a deleted partition. O(producers log producers).
func (p *Partition) Producers() []ProducerState {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return nil
	}
	return p.producers.states()
}

// OngoingTxn returns the first offset of producer id's transaction open in
// the partition, and the producer's epoch; ok is false when it has none
// (KIP-890's verification asks whether a transaction is under way here).
// O(1).
func (p *Partition) OngoingTxn(producerID int64) (firstOffset int64, epoch int16, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return 0, 0, false
	}
	return p.producers.ongoing(producerID)
}

// FirstUndecidedOffset returns the first offset of the earliest
// transaction open in the partition, whose marker is not written yet
// (Kafka's firstUndecidedOffset); ok is false, and the offset -1, when
// none is open. Unlike the last stable offset, it ignores the high
// watermark: a compaction must not rewrite or drop the records of a
// transaction still open, however replicated. O(1).
func (p *Partition) FirstUndecidedOffset() (offset int64, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.deleted {
		return -1, false
	}
	if first, ok := p.txns.ongoing.min(); ok {
		return first, true
	}
	return -1, false
}
