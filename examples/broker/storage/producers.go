package storage

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// producers is a partition's producer state (Kafka's ProducerStateManager
// and its ProducerStateEntry): for each producer id, its epoch, the last
// few batches it wrote, so that a retried batch is recognised and answered
// with its original offset and a gap or a stale epoch is refused, and its
// transaction here: the first offset of the one open, and the epoch of the
// coordinator that wrote its last marker. The partition-wide order of the
// transactions (the last stable offset, the aborted index) is txns'.
//
// REQUIRES: the partition's mu held, for every method.
type producers struct {
	retain int // batches remembered per producer (Kafka: 5, the most a producer may have in flight)
	byID   map[int64]*producerEntry
	// guards are the verification guards taken (verification.go), by
	// producer id; guardSeq numbers them.
	guards   map[int64]guard
	guardSeq uint64
}

type producerEntry struct {
	epoch      int16
	batches    []BatchInfo // the last retain batches with sequences of this epoch, oldest first
	lastAppend time.Time   // when it last wrote here, for expiry
	// lastTimestamp is the max timestamp of its last batch, a marker's
	// included (DescribeProducers' last_timestamp).
	lastTimestamp int64
	// coordinatorEpoch is the epoch of the transaction coordinator that
	// wrote its last marker here, -1 before any: a marker from an older
	// coordinator is fenced.
	coordinatorEpoch int32
	// txnFirst is the first offset of its transaction open here (Kafka's
	// currentTxnFirstOffset), -1 when none is.
	txnFirst int64
	// fromZero is set when a marker moved the producer to a newer epoch
	// (transaction version 2 bumps it at every end of a transaction) and
	// no batch came since: the next must start at sequence 0, as Kafka's
	// last sequence of -1 then asks.
	fromZero bool
}

func newProducers(retain int) producers {
	return producers{retain: retain, byID: make(map[int64]*producerEntry)}
}

// check decides whether b, a client's batch of a producer (b.ProducerID
// >= 0), may be appended. It returns the batch b duplicates (with dup
// true), or an error wrapping ErrInvalidProducerEpoch,
// ErrOutOfOrderSequence or ErrInvalidTxnState. The rules are Kafka's
// (ProducerAppendInfo, since KIP-360):
//
//   - a batch equal in epoch, first and last sequence to one of the last
//     retain batches is a duplicate: a retry of a batch already written;
//   - an epoch older than the producer's is stale;
//   - a newer epoch must start at sequence 0, and so must the epoch a
//     marker moved the producer to (transaction version 2's bump);
//   - the same epoch must continue right after the last sequence;
//   - a producer without state here (new to this partition, or whose
//     batches retention removed, or that expired) may start at any
//     sequence: Kafka answered UNKNOWN_PRODUCER_ID there until 2.5, and now
//     accepts, so that a producer idle past retention is not wedged;
//   - a batch that is not transactional, from a producer whose
//     transaction is open here, is refused (checkTxn).
func (ps *producers) check(b BatchInfo) (dup BatchInfo, isDup bool, err error) {
	e := ps.byID[b.ProducerID]
	if e == nil {
		return BatchInfo{}, false, nil
	}
	if b.ProducerEpoch == e.epoch {
		for _, old := range e.batches {
			if old.FirstSequence == b.FirstSequence && old.LastSequence == b.LastSequence {
				return old, true, nil
			}
		}
	}
	if err := e.checkEpoch(b.ProducerID, b.ProducerEpoch); err != nil {
		return BatchInfo{}, false, err
	}
	switch {
	case b.ProducerEpoch > e.epoch, e.fromZero:
		if b.FirstSequence != 0 {
			return BatchInfo{}, false, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0",
				ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.FirstSequence)
		}
	case len(e.batches) > 0:
		if last := e.batches[len(e.batches)-1].LastSequence; !inSequence(last, b.FirstSequence) {
			return BatchInfo{}, false, fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d",
				ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.FirstSequence, last)
		}
	}
	return BatchInfo{}, false, e.checkTxn(b)
}

// checkCoordinator decides whether b, a coordinator's batch of a producer
// (AppendCoordinator), may be appended: as Kafka's COORDINATOR origin,
// without sequence checks (its sequence is -1) nor duplicates, but its
// epoch must not be stale, and it must be transactional while the
// producer's transaction is open. Its errors are check's.
func (ps *producers) checkCoordinator(b BatchInfo) error {
	e := ps.byID[b.ProducerID]
	if e == nil {
		return nil
	}
	if err := e.checkEpoch(b.ProducerID, b.ProducerEpoch); err != nil {
		return err
	}
	return e.checkTxn(b)
}

// checkMarker decides whether m may be written, as Kafka's
// appendEndTxnMarker does: not for an epoch older than the producer's
// (ErrInvalidProducerEpoch), nor from a coordinator older than the one
// that wrote the producer's last marker (ErrCoordinatorFenced). A marker
// for a producer without state here, or without an open transaction, is
// written: there is nothing to complete.
func (ps *producers) checkMarker(m Marker) error {
	e := ps.byID[m.ProducerID]
	if e == nil {
		return nil
	}
	if err := e.checkEpoch(m.ProducerID, m.ProducerEpoch); err != nil {
		return err
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: a marker for producer %d from coordinator epoch %d, after one from epoch %d",
			ErrCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// checkEpoch refuses an epoch older than the producer's.
func (e *producerEntry) checkEpoch(id int64, epoch int16) error {
	if epoch < e.epoch {
		return fmt.Errorf("%w: producer %d wrote with epoch %d, its epoch here is %d",
			ErrInvalidProducerEpoch, id, epoch, e.epoch)
	}
	return nil
}

// checkTxn refuses a batch that is not transactional while the producer's
// transaction is open (Kafka's appendDataBatch).
func (e *producerEntry) checkTxn(b BatchInfo) error {
	if !b.Transactional && e.txnFirst >= 0 {
		return fmt.Errorf("%w: producer %d wrote a batch that is not transactional in its transaction open since offset %d",
			ErrInvalidTxnState, b.ProducerID, e.txnFirst)
	}
	return nil
}

// inSequence reports whether next follows last, wrapping as sequences do.
func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

// entry returns the state of producer id, made empty (epoch epoch, no
// batches, no coordinator, no transaction) if it has none.
func (ps *producers) entry(id int64, epoch int16) *producerEntry {
	e := ps.byID[id]
	if e == nil {
		e = &producerEntry{epoch: epoch, batches: make([]BatchInfo, 0, ps.retain), coordinatorEpoch: -1, txnFirst: -1}
		ps.byID[id] = e
	}
	return e
}

// setEpoch moves the producer to epoch, forgetting the batches of another
// (Kafka's maybeUpdateProducerEpoch).
func (e *producerEntry) setEpoch(epoch int16) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
}

// touch notes a batch of the producer's, of max timestamp ts, appended at
// now.
func (e *producerEntry) touch(ts int64, now time.Time) {
	e.lastTimestamp = ts
	if now.After(e.lastAppend) {
		e.lastAppend = now
	}
}

// record remembers b, a data batch of a producer appended at its offsets,
// as the producer's latest, if it has sequences, and starts the
// producer's transaction at b if b is transactional and none is open. It
// reports whether it started one.
func (ps *producers) record(b BatchInfo, now time.Time) (started bool) {
	e := ps.entry(b.ProducerID, b.ProducerEpoch)
	e.setEpoch(b.ProducerEpoch)
	e.fromZero = false
	if b.hasSequence() {
		if len(e.batches) == ps.retain {
			copy(e.batches, e.batches[1:])
			e.batches = e.batches[:len(e.batches)-1]
		}
		e.batches = append(e.batches, b)
	}
	e.touch(b.MaxTimestamp, now)
	if b.Transactional && e.txnFirst < 0 {
		e.txnFirst = b.BaseOffset
		return true
	}
	return false
}

// endTxn applies b, a transaction marker appended at its offset, to its
// producer (Kafka's appendEndTxnMarker): the producer takes its epoch and
// its coordinator's, and its open transaction, if any, is complete. A
// marker at a newer epoch than the producer's (transaction version 2's
// bump, or a fence) forgets its sequences: its next batch starts at 0.
// It returns that transaction's first offset, with ok false when none was
// open.
func (ps *producers) endTxn(b BatchInfo, now time.Time) (first int64, ok bool) {
	e := ps.entry(b.ProducerID, b.ProducerEpoch)
	if b.ProducerEpoch > e.epoch {
		e.fromZero = true
	}
	e.setEpoch(b.ProducerEpoch)
	e.coordinatorEpoch = b.CoordinatorEpoch
	e.touch(b.MaxTimestamp, now)
	first, e.txnFirst = e.txnFirst, -1
	return first, first >= 0
}

// ongoing returns the first offset of producer id's open transaction here,
// and its epoch.
func (ps *producers) ongoing(id int64) (first int64, epoch int16, ok bool) {
	e := ps.byID[id]
	if e == nil || e.txnFirst < 0 {
		return 0, 0, false
	}
	return e.txnFirst, e.epoch, true
}

// states returns every producer's state, by producer id. O(producers log
// producers).
func (ps *producers) states() []ProducerState {
	out := make([]ProducerState, 0, len(ps.byID))
	for id, e := range ps.byID {
		s := ProducerState{ProducerID: id, ProducerEpoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastTimestamp,
			CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.txnFirst}
		if n := len(e.batches); n > 0 {
			s.LastSequence = e.batches[n-1].LastSequence
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// expire forgets the producers that have not written here since before
// idleBefore (Kafka's producer id expiry), but never one whose transaction
// is open: its first offset holds the last stable offset back, and its
// marker must complete it (Kafka's isProducerExpired likewise keeps a
// producer with a current transaction). Retention removing a producer's
// batches does not forget it: since KAFKA-7190 Kafka keeps the state until
// it expires, so that a producer on a quiet topic is still deduplicated.
func (ps *producers) expire(idleBefore time.Time) {
	for id, e := range ps.byID {
		if e.txnFirst < 0 && e.lastAppend.Before(idleBefore) {
			delete(ps.byID, id)
		}
	}
	// A guard whose batch never came (its check refused it) goes with
	// the producers that expire, or that never wrote here.
	for id := range ps.guards {
		if ps.byID[id] == nil {
			delete(ps.guards, id)
		}
	}
}
