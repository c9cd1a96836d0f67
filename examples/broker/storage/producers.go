package storage

import (
	"fmt"
	"math"
	"time"
)

// producers is a partition's idempotent-producer state (Kafka's
// ProducerStateManager, without transactions): for each producer id, its
// epoch and the last few batches it wrote, so that a retried batch is
// recognised and answered with its original offset, and a gap or a stale
// epoch is refused.
//
// REQUIRES: the partition's mu held, for every method.
type producers struct {
	retain int // batches remembered per producer (Kafka: 5, the most a producer may have in flight)
	byID   map[int64]*producerEntry
}

type producerEntry struct {
	epoch      int16
	batches    []BatchInfo // the last retain batches of this epoch, oldest first
	lastAppend time.Time   // when it last wrote here, for expiry
}

func newProducers(retain int) producers {
	return producers{retain: retain, byID: make(map[int64]*producerEntry)}
}

// check decides whether b, from an idempotent producer, may be appended.
// It returns the batch b duplicates (with dup true), or an error wrapping
// ErrInvalidProducerEpoch or ErrOutOfOrderSequence. The rules are Kafka's
// (ProducerAppendInfo, since KIP-360):
//
//   - a batch equal in epoch, first and last sequence to one of the last
//     retain batches is a duplicate: a retry of a batch already written;
//   - an epoch older than the producer's is stale;
//   - a newer epoch must start at sequence 0;
//   - the same epoch must continue right after the last sequence;
//   - a producer without state here (new to this partition, or whose
//     batches retention removed, or that expired) may start at any
//     sequence: Kafka answered UNKNOWN_PRODUCER_ID there until 2.5, and now
//     accepts, so that a producer idle past retention is not wedged.
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
	switch {
	case b.ProducerEpoch < e.epoch:
		return BatchInfo{}, false, fmt.Errorf("%w: producer %d wrote with epoch %d, its epoch here is %d",
			ErrInvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, e.epoch)
	case b.ProducerEpoch > e.epoch:
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
	return BatchInfo{}, false, nil
}

// inSequence reports whether next follows last, wrapping as sequences do.
func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

// record remembers b, appended at its offsets, as its producer's latest.
func (ps *producers) record(b BatchInfo, now time.Time) {
	e := ps.byID[b.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: b.ProducerEpoch, batches: make([]BatchInfo, 0, ps.retain)}
		ps.byID[b.ProducerID] = e
	}
	if b.ProducerEpoch != e.epoch {
		e.epoch = b.ProducerEpoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == ps.retain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:len(e.batches)-1]
	}
	e.batches = append(e.batches, b)
	if now.After(e.lastAppend) {
		e.lastAppend = now
	}
}

// expire forgets the producers that have not written here since before
// idleBefore (Kafka's producer id expiry). Retention removing a producer's
// batches does not forget it: since KAFKA-7190 Kafka keeps the state until
// it expires, so that a producer on a quiet topic is still deduplicated.
func (ps *producers) expire(idleBefore time.Time) {
	for id, e := range ps.byID {
		if e.lastAppend.Before(idleBefore) {
			delete(ps.byID, id)
		}
	}
}
